// PyCUDA's pycuda-helpers.hpp for CUDA C compiled by cuk (NVRTC), written for cuk.
// Textures hold 32-bit words, so a double (or a complex number) is fetched as integer
// words and put back together here. PyCUDA's versions take texture references, which
// CUDA 12 removed and cuk does not offer; these take a texture object
// (cudaTextureObject_t) and the element type: fp_tex1Dfetch<double>(tex, i).
// The fp_tex_* names are the types such a texture's channels are declared with.
#ifndef CUK_PYCUDA_HELPERS_HPP
#define CUK_PYCUDA_HELPERS_HPP

#include <pycuda-complex.hpp>

extern "C++" {
typedef float fp_tex_float;
typedef int2 fp_tex_double;
typedef uint2 fp_tex_cfloat;
typedef int4 fp_tex_cdouble;

namespace pycuda {
namespace detail {
// The texel type a T is stored as, and how it becomes a T again.
template <class T> struct texel {
    typedef T type;
    static __device__ T get(const T &v) { return v; }
};
template <> struct texel<double> {
    typedef fp_tex_double type;
    static __device__ double get(const int2 &v) { return __hiloint2double(v.y, v.x); }
};
template <> struct texel<complex<float> > {
    typedef fp_tex_cfloat type;
    static __device__ complex<float> get(const uint2 &v) {
        return complex<float>(__int_as_float((int)v.x), __int_as_float((int)v.y));
    }
};
template <> struct texel<complex<double> > {
    typedef fp_tex_cdouble type;
    static __device__ complex<double> get(const int4 &v) {
        return complex<double>(__hiloint2double(v.y, v.x), __hiloint2double(v.w, v.z));
    }
};
} // namespace detail
} // namespace pycuda

template <class T> __device__ inline T fp_tex1Dfetch(cudaTextureObject_t tex, int i) {
    typedef pycuda::detail::texel<T> t;
    return t::get(tex1Dfetch<typename t::type>(tex, i));
}
template <class T> __device__ inline T fp_tex1D(cudaTextureObject_t tex, float x) {
    typedef pycuda::detail::texel<T> t;
    return t::get(tex1D<typename t::type>(tex, x));
}
template <class T> __device__ inline T fp_tex2D(cudaTextureObject_t tex, float x, float y) {
    typedef pycuda::detail::texel<T> t;
    return t::get(tex2D<typename t::type>(tex, x, y));
}
template <class T> __device__ inline T fp_tex2DLayered(cudaTextureObject_t tex, float x, float y, int layer) {
    typedef pycuda::detail::texel<T> t;
    return t::get(tex2DLayered<typename t::type>(tex, x, y, layer));
}
template <class T> __device__ inline T fp_tex3D(cudaTextureObject_t tex, float x, float y, float z) {
    typedef pycuda::detail::texel<T> t;
    return t::get(tex3D<typename t::type>(tex, x, y, z));
}
}
#endif

// pycuda::complex<T> for CUDA C compiled by cuk (NVRTC): the complex type PyCUDA's
// kernels use, written for cuk. complex<float> and complex<double> have the layout of
// NumPy's complex64 and complex128 (the real part first), so GPUArrays of those dtypes
// and prepared arguments 'F'/'D' pass straight in. Scalars mix with complex numbers in
// any arithmetic type (z * 2, 0.5f + z); functions follow C99's Annex G formulas.
#ifndef CUK_PYCUDA_COMPLEX_HPP
#define CUK_PYCUDA_COMPLEX_HPP

extern "C++" {
namespace pycuda {

namespace detail {
// T in a position that takes no part in deduction: complex<float> * 2.0 converts 2.0.
template <class T> struct same { typedef T type; };
}

template <class T> struct __align__(2 * sizeof(T)) complex {
    typedef T value_type;
    T _M_re, _M_im;

    __host__ __device__ complex(const T &re = T(), const T &im = T()) : _M_re(re), _M_im(im) {}
    template <class U> __host__ __device__ complex(const complex<U> &z) : _M_re(T(z._M_re)), _M_im(T(z._M_im)) {}

    __host__ __device__ T real() const { return _M_re; }
    __host__ __device__ T imag() const { return _M_im; }
    __host__ __device__ void real(T v) { _M_re = v; }
    __host__ __device__ void imag(T v) { _M_im = v; }
    // reads of a volatile (shared-memory) value, for hand-written reductions
    __host__ __device__ T real() const volatile { return _M_re; }
    __host__ __device__ T imag() const volatile { return _M_im; }

    __host__ __device__ complex &operator=(const T &x) {
        _M_re = x;
        _M_im = T();
        return *this;
    }
    __host__ __device__ complex &operator+=(const T &x) {
        _M_re += x;
        return *this;
    }
    __host__ __device__ complex &operator-=(const T &x) {
        _M_re -= x;
        return *this;
    }
    __host__ __device__ complex &operator*=(const T &x) {
        _M_re *= x;
        _M_im *= x;
        return *this;
    }
    __host__ __device__ complex &operator/=(const T &x) {
        _M_re /= x;
        _M_im /= x;
        return *this;
    }
    template <class U> __host__ __device__ complex &operator+=(const complex<U> &z) {
        _M_re += T(z._M_re);
        _M_im += T(z._M_im);
        return *this;
    }
    template <class U> __host__ __device__ complex &operator-=(const complex<U> &z) {
        _M_re -= T(z._M_re);
        _M_im -= T(z._M_im);
        return *this;
    }
    template <class U> __host__ __device__ complex &operator*=(const complex<U> &z) {
        return *this = *this * complex(z);
    }
    template <class U> __host__ __device__ complex &operator/=(const complex<U> &z) {
        return *this = *this / complex(z);
    }
};

// ---- arithmetic ---------------------------------------------------------------------

template <class T> __host__ __device__ inline complex<T> operator+(const complex<T> &z) { return z; }
template <class T> __host__ __device__ inline complex<T> operator-(const complex<T> &z) {
    return complex<T>(-z._M_re, -z._M_im);
}
template <class T> __host__ __device__ inline complex<T> operator+(const complex<T> &a, const complex<T> &b) {
    return complex<T>(a._M_re + b._M_re, a._M_im + b._M_im);
}
template <class T> __host__ __device__ inline complex<T> operator-(const complex<T> &a, const complex<T> &b) {
    return complex<T>(a._M_re - b._M_re, a._M_im - b._M_im);
}
template <class T> __host__ __device__ inline complex<T> operator*(const complex<T> &a, const complex<T> &b) {
    return complex<T>(a._M_re * b._M_re - a._M_im * b._M_im, a._M_re * b._M_im + a._M_im * b._M_re);
}
// Smith's division: scales by the larger part of b, so |b| may be near the range's ends.
template <class T> __host__ __device__ inline complex<T> operator/(const complex<T> &a, const complex<T> &b) {
    T br = b._M_re, bi = b._M_im;
    if (fabs(br) >= fabs(bi)) {
        T r = bi / br, d = br + bi * r;
        return complex<T>((a._M_re + a._M_im * r) / d, (a._M_im - a._M_re * r) / d);
    }
    T r = br / bi, d = br * r + bi;
    return complex<T>((a._M_re * r + a._M_im) / d, (a._M_im * r - a._M_re) / d);
}
// the same with volatile operands (shared-memory reductions)
template <class T>
__host__ __device__ inline complex<T> operator+(const volatile complex<T> &a, const volatile complex<T> &b) {
    return complex<T>(a._M_re + b._M_re, a._M_im + b._M_im);
}
template <class T>
__host__ __device__ inline complex<T> operator*(const volatile complex<T> &a, const volatile complex<T> &b) {
    return complex<T>(a._M_re * b._M_re - a._M_im * b._M_im, a._M_re * b._M_im + a._M_im * b._M_re);
}

#define CUK_COMPLEX_SCALAR_OPS(op)                                                                  \
    template <class T>                                                                              \
    __host__ __device__ inline complex<T> operator op(const complex<T> &z, const typename detail::same<T>::type &x) { \
        return z op complex<T>(x);                                                                  \
    }                                                                                               \
    template <class T>                                                                              \
    __host__ __device__ inline complex<T> operator op(const typename detail::same<T>::type &x, const complex<T> &z) { \
        return complex<T>(x) op z;                                                                  \
    }
CUK_COMPLEX_SCALAR_OPS(+)
CUK_COMPLEX_SCALAR_OPS(-)
CUK_COMPLEX_SCALAR_OPS(/)
#undef CUK_COMPLEX_SCALAR_OPS
// a real factor scales both parts (no cross terms: inf * (1 + 0i) stays finite in im)
template <class T>
__host__ __device__ inline complex<T> operator*(const complex<T> &z, const typename detail::same<T>::type &x) {
    return complex<T>(z._M_re * x, z._M_im * x);
}
template <class T>
__host__ __device__ inline complex<T> operator*(const typename detail::same<T>::type &x, const complex<T> &z) {
    return complex<T>(x * z._M_re, x * z._M_im);
}

template <class T> __host__ __device__ inline bool operator==(const complex<T> &a, const complex<T> &b) {
    return a._M_re == b._M_re && a._M_im == b._M_im;
}
template <class T> __host__ __device__ inline bool operator!=(const complex<T> &a, const complex<T> &b) {
    return !(a == b);
}
template <class T>
__host__ __device__ inline bool operator==(const complex<T> &a, const typename detail::same<T>::type &x) {
    return a._M_re == x && a._M_im == T();
}
template <class T>
__host__ __device__ inline bool operator!=(const complex<T> &a, const typename detail::same<T>::type &x) {
    return !(a == x);
}

// ---- parts and polar form -----------------------------------------------------------------

template <class T> __host__ __device__ inline T real(const complex<T> &z) { return z._M_re; }
template <class T> __host__ __device__ inline T imag(const complex<T> &z) { return z._M_im; }
template <class T> __host__ __device__ inline complex<T> conj(const complex<T> &z) {
    return complex<T>(z._M_re, -z._M_im);
}
template <class T> __host__ __device__ inline T abs(const complex<T> &z) { return ::hypot(z._M_re, z._M_im); }
template <class T> __host__ __device__ inline T arg(const complex<T> &z) { return ::atan2(z._M_im, z._M_re); }
// |z|^2, as std::norm
template <class T> __host__ __device__ inline T norm(const complex<T> &z) {
    return z._M_re * z._M_re + z._M_im * z._M_im;
}
template <class T> __host__ __device__ inline complex<T> polar(const T &r, const T &theta = T()) {
    return complex<T>(r * ::cos(theta), r * ::sin(theta));
}
template <class T> __host__ __device__ inline complex<T> proj(const complex<T> &z) {
    if (::isinf(z._M_re) || ::isinf(z._M_im)) return complex<T>(T(1) / T(0), ::copysign(T(), z._M_im));
    return z;
}

// ---- functions -------------------------------------------------------------------------------

template <class T> __host__ __device__ inline complex<T> exp(const complex<T> &z) {
    T m = ::exp(z._M_re);
    return complex<T>(m * ::cos(z._M_im), m * ::sin(z._M_im));
}
template <class T> __host__ __device__ inline complex<T> log(const complex<T> &z) {
    return complex<T>(::log(abs(z)), arg(z));
}
template <class T> __host__ __device__ inline complex<T> log10(const complex<T> &z) {
    return log(z) * T(0.43429448190325182765);
}
// the principal root, computed without cancellation (Kahan)
template <class T> __host__ __device__ inline complex<T> sqrt(const complex<T> &z) {
    T x = z._M_re, y = z._M_im;
    if (x == T() && y == T()) return complex<T>(T(), y);
    T t = ::sqrt((::fabs(x) + abs(z)) / T(2));
    if (x >= T()) return complex<T>(t, y / (T(2) * t));
    return complex<T>(::fabs(y) / (T(2) * t), ::copysign(t, y));
}
// integer powers by repeated squaring: exact where the products are (pow(z, 2) is z * z)
template <class T> __host__ __device__ inline complex<T> pow(const complex<T> &z, int n) {
    complex<T> r(T(1)), b = z;
    unsigned k = n < 0 ? 0u - (unsigned)n : (unsigned)n;
    for (; k; k >>= 1, b = b * b)
        if (k & 1) r = r * b;
    return n < 0 ? complex<T>(T(1)) / r : r;
}
template <class T> __host__ __device__ inline complex<T> pow(const complex<T> &z, const complex<T> &w) {
    if (z._M_re == T() && z._M_im == T()) return complex<T>();
    return exp(w * log(z));
}
template <class T>
__host__ __device__ inline complex<T> pow(const complex<T> &z, const typename detail::same<T>::type &x) {
    if (z._M_re == T() && z._M_im == T()) return complex<T>();
    return polar(::pow(abs(z), x), arg(z) * x);
}
template <class T>
__host__ __device__ inline complex<T> pow(const typename detail::same<T>::type &x, const complex<T> &w) {
    return pow(complex<T>(x), w);
}
template <class T> __host__ __device__ inline complex<T> sin(const complex<T> &z) {
    return complex<T>(::sin(z._M_re) * ::cosh(z._M_im), ::cos(z._M_re) * ::sinh(z._M_im));
}
template <class T> __host__ __device__ inline complex<T> cos(const complex<T> &z) {
    return complex<T>(::cos(z._M_re) * ::cosh(z._M_im), -::sin(z._M_re) * ::sinh(z._M_im));
}
template <class T> __host__ __device__ inline complex<T> sinh(const complex<T> &z) {
    return complex<T>(::sinh(z._M_re) * ::cos(z._M_im), ::cosh(z._M_re) * ::sin(z._M_im));
}
template <class T> __host__ __device__ inline complex<T> cosh(const complex<T> &z) {
    return complex<T>(::cosh(z._M_re) * ::cos(z._M_im), ::sinh(z._M_re) * ::sin(z._M_im));
}
// tanh(x + iy) = (sinh 2x + i sin 2y) / (cosh 2x + cos 2y), saturating for large |x|
template <class T> __host__ __device__ inline complex<T> tanh(const complex<T> &z) {
    T x2 = T(2) * z._M_re, y2 = T(2) * z._M_im;
    if (::fabs(z._M_re) > T(20)) return complex<T>(::copysign(T(1), z._M_re), T());
    T d = ::cosh(x2) + ::cos(y2);
    return complex<T>(::sinh(x2) / d, ::sin(y2) / d);
}
template <class T> __host__ __device__ inline complex<T> tan(const complex<T> &z) {
    complex<T> t = tanh(complex<T>(-z._M_im, z._M_re)); // tan z = -i tanh(iz)
    return complex<T>(t._M_im, -t._M_re);
}

} // namespace pycuda
}
#endif

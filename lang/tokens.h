/* Every token of the language, once: X(NAME, kind, text). The grammar (grammar.y)
   declares the same NAMEs as terminals (Lemon numbers them TK_NAME in grammar.h). For a
   keyword (KW) or punctuation (PUNCT) the text is what the source spells; for a class of
   tokens (CLASS) it is how messages name one. The lexer takes its keywords from here and
   syntax errors their token names ("expected ';' or ')'"); adding a keyword is a row here
   and its grammar rules. */
#ifndef CUK_TOKENS_H
#define CUK_TOKENS_H

#define TOKENS(X)                                                                                \
    X(FN, KW, "fn")                                                                              \
    X(LET, KW, "let")                                                                            \
    X(VAR, KW, "var")                                                                            \
    X(IF, KW, "if")                                                                              \
    X(ELSE, KW, "else")                                                                          \
    X(FOR, KW, "for")                                                                            \
    X(IN, KW, "in")                                                                              \
    X(WHILE, KW, "while")                                                                        \
    X(RETURN, KW, "return")                                                                      \
    X(TRUE, KW, "true")                                                                          \
    X(FALSE, KW, "false")                                                                        \
    X(IDENT, CLASS, "a name")                                                                    \
    X(INT, CLASS, "an integer")                                                                  \
    X(FLOAT, CLASS, "a float")                                                                   \
    X(STRING, CLASS, "a string")                                                                 \
    X(LPAREN, PUNCT, "(")                                                                        \
    X(RPAREN, PUNCT, ")")                                                                        \
    X(LBRACKET, PUNCT, "[")                                                                      \
    X(RBRACKET, PUNCT, "]")                                                                      \
    X(LBRACE, PUNCT, "{")                                                                        \
    X(RBRACE, PUNCT, "}")                                                                        \
    X(COMMA, PUNCT, ",")                                                                         \
    X(SEMI, PUNCT, ";")                                                                          \
    X(COLON, PUNCT, ":")                                                                         \
    X(ARROW, PUNCT, "->")                                                                        \
    X(ASSIGN, PUNCT, "=")                                                                        \
    X(DOTDOT, PUNCT, "..")                                                                       \
    X(QUESTION, PUNCT, "?")                                                                      \
    X(OROR, PUNCT, "||")                                                                         \
    X(ANDAND, PUNCT, "&&")                                                                       \
    X(PIPE, PUNCT, "|")                                                                          \
    X(CARET, PUNCT, "^")                                                                         \
    X(AMP, PUNCT, "&")                                                                           \
    X(EQEQ, PUNCT, "==")                                                                         \
    X(NE, PUNCT, "!=")                                                                           \
    X(LT, PUNCT, "<")                                                                            \
    X(LE, PUNCT, "<=")                                                                           \
    X(GT, PUNCT, ">")                                                                            \
    X(GE, PUNCT, ">=")                                                                           \
    X(SHL, PUNCT, "<<")                                                                          \
    X(SHR, PUNCT, ">>")                                                                          \
    X(PLUS, PUNCT, "+")                                                                          \
    X(MINUS, PUNCT, "-")                                                                         \
    X(STAR, PUNCT, "*")                                                                          \
    X(SLASH, PUNCT, "/")                                                                         \
    X(PERCENT, PUNCT, "%")                                                                       \
    X(BANG, PUNCT, "!")                                                                          \
    X(TILDE, PUNCT, "~")                                                                         \
    X(STARSTAR, PUNCT, "**")                                                                     \
    X(AT, PUNCT, "@")

/* How a message names a token of each kind: keywords and punctuation in quotes. */
#define TOKEN_NAME_KW(text) "'" text "'"
#define TOKEN_NAME_PUNCT(text) "'" text "'"
#define TOKEN_NAME_CLASS(text) text

#endif

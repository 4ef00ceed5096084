#ifndef ATSGATE_COPENSSL_SHIM_H
#define ATSGATE_COPENSSL_SHIM_H
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/ec.h>

/* OpenSSL spells these as function-like macros (SSL_ctrl / BIO_ctrl calls, type-checked stack
   wrappers), which Swift cannot import. Each wrapper is the macro, nothing more. */

static inline int atsgate_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

static inline int atsgate_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline int atsgate_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

static inline long atsgate_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

/* SSL_OP_* are 64-bit shifts of a cast, which Swift does not import.
   No compression (CRIME); a peer that closes without close_notify reads as a clean end of stream, as
   every HTTP client treats it (HTTP framing, not the TLS close, marks the end of a message). */
static inline uint64_t atsgate_client_options(void) {
    return SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF;
}

/* The bytes a memory BIO holds; *data points into the BIO. */
static inline long atsgate_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

/* RFC 2253 order and separators, but UTF-8 left readable instead of escaped. */
static inline unsigned long atsgate_name_print_flags(void) {
    return XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB;
}

static inline STACK_OF(X509) *atsgate_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int atsgate_sk_X509_push(STACK_OF(X509) *stack, X509 *cert) { return sk_X509_push(stack, cert); }
static inline int atsgate_sk_X509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *atsgate_sk_X509_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
/* Frees the stack and drops one reference of each certificate (for X509_STORE_CTX_get1_chain). */
static inline void atsgate_sk_X509_pop_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }
/* Frees the stack only; the certificates stay owned elsewhere. */
static inline void atsgate_sk_X509_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }

/* The subjectAltName extension of a certificate, or NULL; free with atsgate_general_names_free. */
static inline GENERAL_NAMES *atsgate_subject_alt_names(X509 *cert) {
    return (GENERAL_NAMES *)X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
}
static inline int atsgate_general_names_count(const GENERAL_NAMES *names) { return sk_GENERAL_NAME_num(names); }
static inline GENERAL_NAME *atsgate_general_names_value(const GENERAL_NAMES *names, int index) {
    return sk_GENERAL_NAME_value(names, index);
}
static inline void atsgate_general_names_free(GENERAL_NAMES *names) { GENERAL_NAMES_free(names); }

#endif

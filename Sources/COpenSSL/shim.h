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
#include <openssl/ct.h>
#include <openssl/pkcs7.h>
#include <stdio.h>
#include <string.h>

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

/* The TLS listener's options (--listen-tls): no compression (CRIME), no renegotiation (a client could
   make the proxy redo the costly part of a handshake on an event loop), the server's cipher order, and
   a client that closes without close_notify read as an end of stream, as for the upstream side. */
static inline uint64_t atsgate_server_options(void) {
    return SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE
        | SSL_OP_IGNORE_UNEXPECTED_EOF;
}

static inline long atsgate_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

/* Adds a certificate of the chain the server sends after its leaf (one more reference to it). */
static inline long atsgate_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return SSL_CTX_add1_chain_cert(ctx, cert);
}

/* ALPN on the TLS listener: the proxy speaks HTTP/1.1, says so when the client offers it, and stays
   silent otherwise (the client then assumes HTTP/1.1 all the same); never h2. */
static int atsgate_alpn_select_http11(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                      const unsigned char *in, unsigned int inlen, void *arg) {
    static const unsigned char http11[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
    unsigned char *selected = NULL;
    (void)ssl; (void)arg;
    if (SSL_select_next_proto(&selected, outlen, http11, sizeof http11, in, inlen) == OPENSSL_NPN_NEGOTIATED) {
        *out = selected;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_NOACK;
}
static inline void atsgate_SSL_CTX_select_http11(SSL_CTX *ctx) {
    SSL_CTX_set_alpn_select_cb(ctx, atsgate_alpn_select_http11, NULL);
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


/* RFC 7627: whether the server agreed to the extended master secret (1), not (0), or unknown (-1). */
static inline long atsgate_SSL_get_extms_support(SSL *ssl) { return SSL_get_extms_support(ssl); }

/* The extendedKeyUsage OIDs of a certificate in dotted form, written into `out` separated by spaces;
   returns how many there are, or -1 when the extension is absent. */
static inline int atsgate_extended_key_usages(X509 *cert, char *out, int size) {
    int critical = 0;
    EXTENDED_KEY_USAGE *usages = (EXTENDED_KEY_USAGE *)X509_get_ext_d2i(cert, NID_ext_key_usage, &critical, NULL);
    if (usages == NULL) { return critical == -1 ? -1 : 0; }
    int count = sk_ASN1_OBJECT_num(usages);
    int used = 0;
    if (size > 0) { out[0] = 0; }
    for (int i = 0; i < count; i++) {
        char oid[80];
        if (OBJ_obj2txt(oid, sizeof oid, sk_ASN1_OBJECT_value(usages, i), 1) <= 0) { continue; }
        int n = snprintf(out + used, size > used ? (size_t)(size - used) : 0, "%s%s", used ? " " : "", oid);
        if (n > 0) { used += n; }
    }
    EXTENDED_KEY_USAGE_free(usages);
    return count;
}

/* SCT lists: the certificate's embedded one (free with atsgate_sct_list_free), and every SCT the peer
   presented on a connection (embedded, TLS extension, stapled OCSP; owned by the SSL). */
static inline STACK_OF(SCT) *atsgate_embedded_scts(X509 *cert) {
    return (STACK_OF(SCT) *)X509_get_ext_d2i(cert, NID_ct_precert_scts, NULL, NULL);
}
static inline int atsgate_sct_count(const STACK_OF(SCT) *list) { return list ? sk_SCT_num(list) : 0; }
static inline SCT *atsgate_sct_value(const STACK_OF(SCT) *list, int index) { return sk_SCT_value(list, index); }
static inline void atsgate_sct_list_free(STACK_OF(SCT) *list) { SCT_LIST_free(list); }

/* Asks the server for SCTs (the TLS extension and a stapled OCSP response) without letting OpenSSL
   judge them: the SCTs are counted (and verified) by atsgate's R16 rule after the handshake. */
static int atsgate_accept_any_scts(const CT_POLICY_EVAL_CTX *ctx, const STACK_OF(SCT) *scts, void *arg) {
    (void)ctx; (void)scts; (void)arg;
    return 1;
}
static inline int atsgate_SSL_request_scts(SSL *ssl) {
    return SSL_set_ct_validation_callback(ssl, atsgate_accept_any_scts, NULL);
}

/* The caIssuers URIs of a certificate's Authority Information Access extension (RFC 5280 section
   4.2.2.1), written into `out` separated by newlines; returns how many, 0 when there is none, -1 when
   `out` was too small. */
static inline int atsgate_ca_issuers(X509 *cert, char *out, int size) {
    AUTHORITY_INFO_ACCESS *access = (AUTHORITY_INFO_ACCESS *)X509_get_ext_d2i(cert, NID_info_access, NULL, NULL);
    int count = 0, used = 0;
    if (size > 0) { out[0] = 0; }
    if (access == NULL) { return 0; }
    for (int i = 0; i < sk_ACCESS_DESCRIPTION_num(access); i++) {
        ACCESS_DESCRIPTION *entry = sk_ACCESS_DESCRIPTION_value(access, i);
        if (OBJ_obj2nid(entry->method) != NID_ad_ca_issuers || entry->location->type != GEN_URI) { continue; }
        const ASN1_IA5STRING *uri = entry->location->d.uniformResourceIdentifier;
        int length = ASN1_STRING_length(uri);
        if (used + length + 2 > size) { count = -1; break; }
        if (used > 0) { out[used++] = '\n'; }
        memcpy(out + used, ASN1_STRING_get0_data(uri), (size_t)length);
        used += length;
        out[used] = 0;
        count++;
    }
    AUTHORITY_INFO_ACCESS_free(access);
    return count;
}

/* The certificates of a PKCS#7 SignedData ("certs-only", as caIssuers URLs serve them), owned by the
   PKCS7; NULL for any other content type. */
static inline STACK_OF(X509) *atsgate_pkcs7_certificates(PKCS7 *p7) {
    if (p7 == NULL || !PKCS7_type_is_signed(p7) || p7->d.sign == NULL) { return NULL; }
    return p7->d.sign->cert;
}

#endif

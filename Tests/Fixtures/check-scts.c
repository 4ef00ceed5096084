/* An independent check of the CT fixtures: OpenSSL's own CT code (not atsgate's) validates each SCT of a
   certificate against a log store.
   Usage: check-scts LOGSTORE.cnf CERT.pem ISSUER.pem [SCTLIST.bin tls|ocsp]
   Without a list file it checks the certificate's embedded SCTs; with one, the TLS-encoded SCT list in
   the file, as delivered in the TLS extension or a stapled OCSP response. Prints one line per SCT:
   "<log description> <status>", status as SCT_validation_status_string names it. Exit 0 when every SCT
   is valid, 1 when one is not, 2 on a setup failure. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <openssl/ct.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

static X509 *read_pem(const char *path) {
    FILE *file = fopen(path, "r");
    if (file == NULL) { return NULL; }
    X509 *cert = PEM_read_X509(file, NULL, NULL, NULL);
    fclose(file);
    return cert;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 6) { fprintf(stderr, "usage: check-scts LOGSTORE CERT ISSUER [LIST tls|ocsp]\n"); return 2; }
    CTLOG_STORE *logs = CTLOG_STORE_new();
    X509 *cert = read_pem(argv[2]), *issuer = read_pem(argv[3]);
    if (logs == NULL || CTLOG_STORE_load_file(logs, argv[1]) != 1 || cert == NULL || issuer == NULL) {
        fprintf(stderr, "check-scts: cannot load the log store or the certificates\n");
        return 2;
    }
    STACK_OF(SCT) *scts = NULL;
    if (argc == 6) {
        FILE *file = fopen(argv[4], "rb");
        unsigned char bytes[65536];
        size_t length = file ? fread(bytes, 1, sizeof bytes, file) : 0;
        if (file) { fclose(file); }
        const unsigned char *cursor = bytes;
        scts = o2i_SCT_LIST(NULL, &cursor, length);
        sct_source_t source = argv[5][0] == 'o' ? SCT_SOURCE_OCSP_STAPLED_RESPONSE : SCT_SOURCE_TLS_EXTENSION;
        for (int i = 0; scts && i < sk_SCT_num(scts); i++) { SCT_set_source(sk_SCT_value(scts, i), source); }
    } else {
        scts = X509_get_ext_d2i(cert, NID_ct_precert_scts, NULL, NULL);
    }
    if (scts == NULL || sk_SCT_num(scts) == 0) { fprintf(stderr, "check-scts: no SCT\n"); return 2; }
    CT_POLICY_EVAL_CTX *context = CT_POLICY_EVAL_CTX_new();
    CT_POLICY_EVAL_CTX_set1_cert(context, cert);
    CT_POLICY_EVAL_CTX_set1_issuer(context, issuer);
    CT_POLICY_EVAL_CTX_set_shared_CTLOG_STORE(context, logs);
    CT_POLICY_EVAL_CTX_set_time(context, (uint64_t)time(NULL) * 1000);
    int ok = 1;
    for (int i = 0; i < sk_SCT_num(scts); i++) {
        SCT *sct = sk_SCT_value(scts, i);
        SCT_validate(sct, context);
        unsigned char *id = NULL;
        size_t id_length = SCT_get0_log_id(sct, &id);
        const CTLOG *log = CTLOG_STORE_get0_log_by_id(logs, id, id_length);
        printf("%s %s\n", log ? CTLOG_get0_name(log) : "unknown-log", SCT_validation_status_string(sct));
        if (SCT_get_validation_status(sct) != SCT_VALIDATION_STATUS_VALID) { ok = 0; }
    }
    return ok ? 0 : 1;
}

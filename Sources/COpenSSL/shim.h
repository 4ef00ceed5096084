#ifndef ATSGATE_COPENSSL_SHIM_H
#define ATSGATE_COPENSSL_SHIM_H
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#endif

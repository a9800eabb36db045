// Wrappers for the parts of OpenSSL 3 that Swift cannot call directly:
// function-like macros, type-safe stack macros and variadic functions.
// Each wrapper does exactly one thing; all logic lives in Swift.
#ifndef CPINSTORE_SHIMS_H
#define CPINSTORE_SHIMS_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/ct.h>

/// `OPENSSL_free` is a macro.
void CPinStoreShims_OPENSSL_free(void *pointer);

/// `BIO_get_mem_data` is a macro. Returns the length and stores the data pointer.
long CPinStoreShims_BIO_get_mem_data(BIO *bio, char **data);

/// `STACK_OF(X509)` helpers (macros in OpenSSL 3).
STACK_OF(X509) *CPinStoreShims_sk_X509_new_null(void);
int CPinStoreShims_sk_X509_push(STACK_OF(X509) *stack, X509 *certificate);
int CPinStoreShims_sk_X509_num(const STACK_OF(X509) *stack);
X509 *CPinStoreShims_sk_X509_value(const STACK_OF(X509) *stack, int index);
/// Frees the stack and every certificate in it.
void CPinStoreShims_sk_X509_pop_free(STACK_OF(X509) *stack);
/// Frees only the stack; the certificates stay owned by the caller.
void CPinStoreShims_sk_X509_free(STACK_OF(X509) *stack);

/// `GENERAL_NAMES` helpers (macros in OpenSSL 3).
int CPinStoreShims_sk_GENERAL_NAME_num(const GENERAL_NAMES *names);
GENERAL_NAME *CPinStoreShims_sk_GENERAL_NAME_value(const GENERAL_NAMES *names, int index);
void CPinStoreShims_GENERAL_NAMES_free(GENERAL_NAMES *names);

/// `ERR_GET_LIB` and `ERR_GET_REASON` are inline/macro helpers.
int CPinStoreShims_ERR_GET_LIB(unsigned long error);
int CPinStoreShims_ERR_GET_REASON(unsigned long error);

/// `EVP_PKEY_Q_keygen` is variadic: generates a fresh key on the named curve.
EVP_PKEY *CPinStoreShims_EVP_PKEY_generate_ec(const char *curveName);

/// `EVP_PKEY_PUBLIC_KEY` is a macro built from other macros: the selection for a public key.
int CPinStoreShims_EVP_PKEY_PUBLIC_KEY(void);

/// `XN_FLAG_RFC2253` without escaping of UTF-8 bytes, so names print as readable UTF-8.
unsigned long CPinStoreShims_XN_FLAG_RFC2253_UTF8(void);

/// `STACK_OF(SCT)` helpers (macros in OpenSSL 3), for the embedded SCT list of a certificate.
STACK_OF(SCT) *CPinStoreShims_sk_SCT_new_null(void);
int CPinStoreShims_sk_SCT_push(STACK_OF(SCT) *stack, SCT *sct);
int CPinStoreShims_sk_SCT_num(const STACK_OF(SCT) *stack);
SCT *CPinStoreShims_sk_SCT_value(const STACK_OF(SCT) *stack, int index);
/// Frees the stack and every SCT in it.
void CPinStoreShims_sk_SCT_pop_free(STACK_OF(SCT) *stack);

/// `EVP_RSA_gen` is a macro over the variadic `EVP_PKEY_Q_keygen`: a fresh RSA key of `bits` bits.
EVP_PKEY *CPinStoreShims_EVP_PKEY_generate_rsa(unsigned int bits);

/// `STACK_OF(DIST_POINT)` helpers (macros in OpenSSL 3), for a certificate's CRL distribution points.
int CPinStoreShims_sk_DIST_POINT_num(const STACK_OF(DIST_POINT) *stack);
DIST_POINT *CPinStoreShims_sk_DIST_POINT_value(const STACK_OF(DIST_POINT) *stack, int index);

/// `STACK_OF(X509_REVOKED)` helpers (macros in OpenSSL 3), for a CRL's revoked entries.
int CPinStoreShims_sk_X509_REVOKED_num(const STACK_OF(X509_REVOKED) *stack);
X509_REVOKED *CPinStoreShims_sk_X509_REVOKED_value(const STACK_OF(X509_REVOKED) *stack, int index);

/// glibc's `malloc_trim(0)` (not in Swift's Glibc module): hands free heap pages back to the
/// system. Does nothing where the C library has no such call.
void CPinStoreShims_malloc_trim(void);

#endif

#include "CPinStoreShims.h"
#include <openssl/crypto.h>
#include <openssl/err.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

void CPinStoreShims_OPENSSL_free(void *pointer) { OPENSSL_free(pointer); }

long CPinStoreShims_BIO_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

STACK_OF(X509) *CPinStoreShims_sk_X509_new_null(void) { return sk_X509_new_null(); }
int CPinStoreShims_sk_X509_push(STACK_OF(X509) *stack, X509 *certificate) { return sk_X509_push(stack, certificate); }
int CPinStoreShims_sk_X509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
X509 *CPinStoreShims_sk_X509_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
void CPinStoreShims_sk_X509_pop_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }
void CPinStoreShims_sk_X509_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }

int CPinStoreShims_sk_GENERAL_NAME_num(const GENERAL_NAMES *names) { return sk_GENERAL_NAME_num(names); }
GENERAL_NAME *CPinStoreShims_sk_GENERAL_NAME_value(const GENERAL_NAMES *names, int index) { return sk_GENERAL_NAME_value(names, index); }
void CPinStoreShims_GENERAL_NAMES_free(GENERAL_NAMES *names) { GENERAL_NAMES_free(names); }

int CPinStoreShims_ERR_GET_LIB(unsigned long error) { return ERR_GET_LIB(error); }
int CPinStoreShims_ERR_GET_REASON(unsigned long error) { return ERR_GET_REASON(error); }

EVP_PKEY *CPinStoreShims_EVP_PKEY_generate_ec(const char *curveName) { return EVP_PKEY_Q_keygen(NULL, NULL, "EC", curveName); }
int CPinStoreShims_EVP_PKEY_PUBLIC_KEY(void) { return EVP_PKEY_PUBLIC_KEY; }
unsigned long CPinStoreShims_XN_FLAG_RFC2253_UTF8(void) { return XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB; }

STACK_OF(SCT) *CPinStoreShims_sk_SCT_new_null(void) { return sk_SCT_new_null(); }
int CPinStoreShims_sk_SCT_push(STACK_OF(SCT) *stack, SCT *sct) { return sk_SCT_push(stack, sct); }
int CPinStoreShims_sk_SCT_num(const STACK_OF(SCT) *stack) { return sk_SCT_num(stack); }
SCT *CPinStoreShims_sk_SCT_value(const STACK_OF(SCT) *stack, int index) { return sk_SCT_value(stack, index); }
void CPinStoreShims_sk_SCT_pop_free(STACK_OF(SCT) *stack) { sk_SCT_pop_free(stack, SCT_free); }

EVP_PKEY *CPinStoreShims_EVP_PKEY_generate_rsa(unsigned int bits) { return EVP_RSA_gen(bits); }

void CPinStoreShims_malloc_trim(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

// libcrypto frees its locks and tables in an `atexit` handler unless it was first initialized
// with OPENSSL_INIT_NO_ATEXIT. A store's background work (a list download verifying signatures
// on every core) can still run when a server calls `exit`, and then crashes in a freed lock: a
// child process exiting mid-update crashed 7 times in 40 (ProcessExitTests). Only the first
// initialization decides, and libcurl (FoundationNetworking's URLSession) initializes libcrypto
// when first used, so this runs when the program is loaded, before any of that. The operating
// system reclaims the memory at exit anyway.
__attribute__((constructor)) static void CPinStoreShims_initializeOpenSSLWithoutExitCleanup(void) {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}

int CPinStoreShims_sk_DIST_POINT_num(const STACK_OF(DIST_POINT) *stack) { return sk_DIST_POINT_num(stack); }
DIST_POINT *CPinStoreShims_sk_DIST_POINT_value(const STACK_OF(DIST_POINT) *stack, int index) { return sk_DIST_POINT_value(stack, index); }

int CPinStoreShims_sk_X509_REVOKED_num(const STACK_OF(X509_REVOKED) *stack) { return sk_X509_REVOKED_num(stack); }
X509_REVOKED *CPinStoreShims_sk_X509_REVOKED_value(const STACK_OF(X509_REVOKED) *stack, int index) { return sk_X509_REVOKED_value(stack, index); }

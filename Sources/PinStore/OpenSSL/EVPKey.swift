internal import COpenSSL

/// Owns one `EVP_PKEY` and frees it with the object.
///
/// `@unchecked Sendable`: OpenSSL 3 keys are reference counted and safe to use for
/// verification and signing from several threads at once; the pointer is never mutated after
/// the key is built.
package final class EVPKey: @unchecked Sendable {
    package let pointer: OpaquePointer

    /// Takes ownership of `pointer`.
    package init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// Whether `signature` is this key's SHA-256 signature of `message` (`EVP_DigestVerify`: a
    /// DER ECDSA signature, or RSA PKCS#1 v1.5, OpenSSL's default padding). A malformed
    /// signature does not verify; its decode errors are cleared from the queue, since they are
    /// expected rather than news for a later call.
    func verifySHA256(signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> Bool {
        guard let context = EVP_MD_CTX_new() else {
            OpenSSLErrorQueue.clear()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, PrefetchedAlgorithms.shared.sha256, nil, pointer) == 1 else {
            OpenSSLErrorQueue.clear()
            return false
        }
        // EVP_DigestVerify wants a non-null message pointer even for an empty message.
        var empty: UInt8 = 0
        let rc = withUnsafePointer(to: &empty) { emptyPointer in
            EVP_DigestVerify(context,
                             signature.baseAddress?.assumingMemoryBound(to: UInt8.self), signature.count,
                             message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyPointer, message.count)
        }
        if rc != 1 { OpenSSLErrorQueue.clear() }
        return rc == 1
    }

    /// Whether the key's algorithm is `name` (e.g. "EC", "RSA").
    package func isA(_ name: String) -> Bool {
        EVP_PKEY_is_a(pointer, name) == 1
    }

    /// The curve name of an EC key, as OpenSSL spells it ("prime256v1", "secp384r1", ...).
    package var groupName: String? {
        var buffer = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(pointer, OSSL_PKEY_PARAM_GROUP_NAME, &buffer, buffer.count, &length) == 1 else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A short description of the key type for error messages ("RSA", "ED25519", ...).
    package var typeName: String {
        if let name = EVP_PKEY_get0_type_name(pointer) { return String(cString: name) }
        return "unknown"
    }
}

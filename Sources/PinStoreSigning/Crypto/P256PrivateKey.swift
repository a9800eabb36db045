import Foundation
import PinStore
internal import COpenSSL
internal import CPinStoreShims

/// An ECDSA P-256 private key, for signing fingerprint lists (the command-line tool, test
/// servers). Apps that only verify lists never need it.
public struct P256PrivateKey: Sendable {
    let key: EVPKey

    /// A fresh random key from OpenSSL's generator.
    public init() throws(PinStoreError) {
        guard let generated = CPinStoreShims_EVP_PKEY_generate_ec(P256PublicKey.curveName) else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not generate a P-256 key.")
        }
        key = EVPKey(taking: generated)
    }

    /// Reads a PEM private key (PKCS#8, encrypted or not, or traditional EC), decrypting it with
    /// `passphrase` when it is encrypted.
    public init(pem: String, passphrase: String? = nil) throws(PinStoreError) {
        guard let bio = MemoryBIO(reading: Data(pem.utf8)) else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not allocate a buffer.")
        }
        // An empty passphrase (rather than nil) stops OpenSSL from prompting on the terminal.
        let parsed = (passphrase ?? "").withCString { pass in
            PEM_read_bio_PrivateKey(bio.pointer, nil, nil, UnsafeMutableRawPointer(mutating: pass))
        }
        guard let parsed else {
            throw OpenSSLErrorQueue.error(.privateKeyInvalid, passphrase == nil
                ? "No readable private key in the PEM text (is it encrypted? then give the passphrase)."
                : "No readable private key in the PEM text, or the passphrase is wrong.")
        }
        let owned = EVPKey(taking: parsed)
        guard owned.isA("EC"), owned.groupName == P256PublicKey.curveName else {
            throw PinStoreError(.privateKeyInvalid, "The private key is \(owned.typeName) \(owned.groupName ?? ""); lists are signed with ECDSA P-256.")
        }
        key = owned
    }

    /// The matching public key.
    public var publicKey: P256PublicKey {
        get throws(PinStoreError) {
            var out: UnsafeMutablePointer<UInt8>? = nil
            let length = i2d_PUBKEY(key.pointer, &out)
            guard length > 0, let out else {
                throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not encode the public key.")
            }
            defer { openSSLFree(out) }
            return try P256PublicKey(derSubjectPublicKeyInfo: Data(bytes: out, count: Int(length)))
        }
    }

    /// The key as PKCS#8 PEM, encrypted with AES-256-CBC when `passphrase` is given.
    public func pkcs8PEM(passphrase: String? = nil) throws(PinStoreError) -> String {
        guard let bio = MemoryBIO() else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not allocate a buffer.")
        }
        let rc: Int32
        if let passphrase {
            rc = passphrase.withCString { pass in
                PEM_write_bio_PKCS8PrivateKey(bio.pointer, key.pointer, EVP_aes_256_cbc(),
                                              pass, Int32(clamping: strlen(pass)), nil, nil)
            }
        } else {
            rc = PEM_write_bio_PKCS8PrivateKey(bio.pointer, key.pointer, nil, nil, 0, nil, nil)
        }
        guard rc == 1 else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not write the private key.")
        }
        return String(decoding: bio.contents, as: UTF8.self)
    }

    /// An ECDSA-SHA256 signature of `message`, DER encoded.
    public func signature(for message: Data) throws(PinStoreError) -> Data {
        guard let context = EVP_MD_CTX_new() else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not allocate a digest context.")
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, PrefetchedAlgorithms.shared.sha256, nil, key.pointer) == 1 else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not start signing.")
        }
        // 72 bytes is the largest DER ECDSA P-256 signature.
        var signature = [UInt8](repeating: 0, count: 80)
        var length = signature.count
        var empty: UInt8 = 0
        let rc = withUnsafePointer(to: &empty) { emptyPointer in
            message.withUnsafeBytes { raw in
                EVP_DigestSign(context, &signature, &length,
                               raw.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyPointer, raw.count)
            }
        }
        guard rc == 1 else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not sign.")
        }
        return Data(signature.prefix(length))
    }
}

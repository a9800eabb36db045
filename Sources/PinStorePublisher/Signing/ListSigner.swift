import Foundation
import PinStore
import PinStoreSigning

/// Something that signs the publisher's bytes with one P-256 key: a key file in this process
/// (``KeyFileSigner``) or a command that asks an HSM or KMS (``CommandSigner``). The bytes are
/// a list entry's signed string, a whole list's signed body, or a staged change's approval.
package protocol ListSigner: Sendable {
    /// The key clients check the signature with.
    var publicKey: P256PublicKey { get }
    /// A DER ECDSA-SHA256 signature of `message` that verifies with ``publicKey``.
    func sign(_ message: Data) async throws(PublisherError) -> Data
}

extension ListSigner {
    /// The key's ID, as whole-list signatures and proposals label it.
    package var keyID: String { KeyDocumentTools.keyID(of: publicKey) }
}

/// Signs with a PEM private key file (PinStoreSigning's ``P256PrivateKey``).
package struct KeyFileSigner: ListSigner {
    package let privateKey: P256PrivateKey
    package let publicKey: P256PublicKey

    package init(privateKey: P256PrivateKey) throws(PublisherError) {
        self.privateKey = privateKey
        do {
            self.publicKey = try privateKey.publicKey
        } catch {
            throw PublisherError(.signingFailed, "The signing key's public half cannot be derived: \(error.reason)")
        }
    }

    /// Reads the PEM key at `url`.
    package init(contentsOf url: URL) throws(PublisherError) {
        let pem: String
        do {
            pem = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw PublisherError(.unreadableReference, "The signing key file \(url.path) cannot be read: \(error.localizedDescription)")
        }
        do {
            try self.init(privateKey: try P256PrivateKey(pem: pem))
        } catch let error as PinStoreError {
            throw PublisherError(.unreadableReference, "The signing key file \(url.path) holds no usable P-256 private key: \(error.reason)")
        } catch let error as PublisherError {
            throw error
        } catch {
            throw PublisherError(.unreadableReference, "The signing key file \(url.path) cannot be used.")
        }
    }

    package func sign(_ message: Data) async throws(PublisherError) -> Data {
        do {
            return try privateKey.signature(for: message)
        } catch {
            throw PublisherError(.signingFailed, "The key file's key could not sign: \(error.reason)")
        }
    }
}

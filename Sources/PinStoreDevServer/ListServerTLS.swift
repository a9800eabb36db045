import Foundation
import NIOSSL

/// The certificate chain and key the development server presents when it serves https.
package struct ListServerTLS: Sendable {
    /// PEM certificates, leaf first, then the intermediates to present.
    package var certificateChainPEM: String
    /// The leaf's private key as PEM (PKCS#8 or traditional, unencrypted).
    package var privateKeyPEM: String

    /// Creates the configuration from PEM text.
    package init(certificateChainPEM: String, privateKeyPEM: String) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
    }

    /// Reads the chain and the key from PEM files.
    package init(certificateChainFile: String, privateKeyFile: String) throws(ListServerError) {
        func read(_ path: String, _ what: String) throws(ListServerError) -> String {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ListServerError("cannot read the TLS \(what) file \(path)")
            }
            return String(decoding: data, as: UTF8.self)
        }
        self.init(certificateChainPEM: try read(certificateChainFile, "certificate chain"),
                  privateKeyPEM: try read(privateKeyFile, "private key"))
    }

    /// The NIOSSL server context for this chain and key.
    func makeContext() throws(ListServerError) -> NIOSSLContext {
        do {
            let chain = try NIOSSLCertificate.fromPEMBytes(Array(certificateChainPEM.utf8))
            guard !chain.isEmpty else {
                throw ListServerError("the TLS certificate chain holds no PEM certificate")
            }
            let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
            let configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) },
                privateKey: .privateKey(key))
            return try NIOSSLContext(configuration: configuration)
        } catch let error as ListServerError {
            throw error
        } catch {
            throw ListServerError("the TLS certificate chain or key is unusable (\(error)); give a PEM chain, leaf first, and its unencrypted PEM key")
        }
    }
}

/// Why the development list server could not start.
package struct ListServerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as one sentence for people.
    package let message: String

    /// Creates the error.
    package init(_ message: String) {
        self.message = message
    }

    package var description: String { message }
}

import ArgumentParser
import Foundation
import PinStore
import PinStoreSigning

/// `pinstore public-key`: the public half of an existing list-signing key, again (keygen prints
/// it only when it makes the key).
struct PublicKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "public-key",
        abstract: "Print the public key apps configure for an existing list-signing key.",
        discussion: """
            Reads a private key file (PKCS#8 PEM, as keygen writes it; encrypted ones with \
            --passphrase-file) and prints its public key as keygen does: Base64 of the X9.63 point \
            (what PinStore.Configuration.publicKey takes), then PEM. With --format base64 or pem, \
            only that form, on one line or block, for scripts.

            Examples:
              pinstore public-key list-signing.key.pem
              pinstore public-key list-signing.key.pem --format base64 > list-signing.pub.b64
            """
    )

    /// What to print.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case both, base64, pem
    }

    @Argument(help: "The private key file (PKCS#8 PEM).")
    var keyFile: String

    @Option(help: "A file whose first line decrypts the private key.")
    var passphraseFile: String?

    @Option(help: "both (default), base64 or pem.")
    var format: Format = .both

    func run() async throws {
        let key = try InputFiles.privateKey(keyFile, passphraseFile: passphraseFile)
        let publicKey: P256PublicKey
        do {
            publicKey = try key.publicKey
        } catch {
            throw CLIError("deriving the public key of \(keyFile)", error)
        }
        let base64 = publicKey.x963Representation.base64EncodedString()
        let pem = publicKey.pemRepresentation.trimmingCharacters(in: .newlines)
        switch format {
        case .base64:
            Console.print(base64)
        case .pem:
            Console.print(pem)
        case .both:
            Console.print("public key (Base64 X9.63, for PinStore.Configuration.publicKey):")
            Console.print(base64)
            Console.print("public key (PEM):")
            Console.print(pem)
        }
    }
}

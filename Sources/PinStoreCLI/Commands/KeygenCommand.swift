import ArgumentParser
import Foundation
import PinStore
import PinStoreSigning

/// `pinstore keygen`: a new list-signing key.
struct KeygenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Generate a P-256 list-signing key and print the public key apps configure.",
        discussion: """
            Writes the private key as PKCS#8 PEM, created with mode 0600 from its first byte (an existing \
            file is kept unless --force), encrypted with AES-256-CBC when a \
            passphrase file is given (its first line is the passphrase). Prints the public key as \
            Base64 of the X9.63 point (what PinStore.Configuration.publicKey takes) and as PEM. \
            Keep the private key off the servers that host the list: whoever holds it decides \
            which certificates every app trusts.

            Examples:
              pinstore keygen --out list-signing.key.pem
              pinstore keygen --out list-signing.key.pem --passphrase-file secret.txt
            """
    )

    @Option(help: "Where to write the private key (PKCS#8 PEM).")
    var out: String

    @Option(help: "A file whose first line encrypts the private key.")
    var passphraseFile: String?

    @Flag(help: "Overwrite an existing key file.")
    var force = false

    func run() async throws {
        // A cheap early answer; the create below (O_EXCL) is what really refuses an existing file.
        if !force, (try? FileManager.default.attributesOfItem(atPath: out)) != nil {
            throw CLIError("\(out) already exists; refusing to overwrite a key (use --force if you mean it)")
        }
        let passphrase = try InputFiles.passphrase(passphraseFile)
        do {
            let key = try P256PrivateKey()
            let pem = try key.pkcs8PEM(passphrase: passphrase)
            let publicKey = try key.publicKey
            try SecretFile.write(Data(pem.utf8), to: out, replacingExisting: force)
            Console.print("private key: \(out) (PKCS#8 PEM\(passphrase == nil ? "" : ", encrypted"), mode 0600)")
            Console.print("public key (Base64 X9.63, for PinStore.Configuration.publicKey):")
            Console.print(publicKey.x963Representation.base64EncodedString())
            Console.print("public key (PEM):")
            Console.print(publicKey.pemRepresentation.trimmingCharacters(in: .newlines))
        } catch let error as PinStoreError {
            throw CLIError("generating the key", error)
        }
    }
}

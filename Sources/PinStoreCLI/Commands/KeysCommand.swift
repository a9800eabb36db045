import ArgumentParser
import Foundation
import PinStore
import PinStoreSigning

/// `pinstore keys`: the signed key documents that rotate the list-signing keys.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Make and check the key documents that rotate list-signing keys without a release.",
        discussion: """
            A key document names the keys that sign lists and how many of them must sign \
            (the threshold). Version N+1 is signed by a threshold of version N's keys and by a \
            threshold of its own; stores follow the versions from the key set they were \
            configured with (keyDocumentURL), at most 32 per update, none skipped.

            The file these commands write is what the list server serves beside the list \
            ({"keyDocuments": [...]}; `pinstore serve --key-documents`).

            Examples:
              pinstore keys create --public-key a.pub.pem --public-key b.pub.pem --public-key c.pub.pem --threshold 2 \\
                  --expires 2027-06-30 --sign-with a.key.pem --sign-with b.key.pem --out keys.json
              pinstore keys next --keys keys.json --public-key b.pub.pem --public-key c.pub.pem --public-key d.pub.pem \\
                  --threshold 2 --expires 2027-12-31 --sign-with b.key.pem --sign-with c.key.pem --sign-with d.key.pem
              pinstore keys verify keys.json --public-key a.pub.pem --public-key b.pub.pem --public-key c.pub.pem --threshold 2
            """,
        subcommands: [Create.self, Next.self, Verify.self]
    )

    /// Options every signing subcommand shares.
    struct SigningOptions: ParsableArguments {
        @Option(help: "A public key of the new set (Base64 X9.63, PEM or DER SPKI, inline or as a file); repeat for each key.")
        var publicKey: [String] = []

        @Option(help: "How many distinct keys of the new set must sign lists and the next document.")
        var threshold: Int = 1

        @Option(help: "When the document stops being acceptable as the newest (Unix seconds or ISO 8601). Publish a re-signed version before then.")
        var expires: String

        @Option(help: "A private key (PEM) that signs the document; repeat for each key (old and new keys for a next version).")
        var signWith: [String] = []

        @Option(help: "A file whose first line decrypts the keys.")
        var passphraseFile: String?

        func keys() throws -> [P256PublicKey] {
            guard !publicKey.isEmpty else { throw ValidationError("Give at least one --public-key.") }
            return try publicKey.map(InputFiles.publicKey)
        }

        func signers() throws -> [P256PrivateKey] {
            guard !signWith.isEmpty else { throw ValidationError("Give at least one --sign-with.") }
            return try signWith.map { try InputFiles.privateKey($0, passphraseFile: passphraseFile) }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start a key document file with the set apps are configured with.")

        @OptionGroup var signing: SigningOptions

        @Option(help: "The version of this first document (the apps' trustedKeyVersion).")
        var version: Int64 = 1

        @Option(help: "Where to write the key document file.")
        var out: String

        func run() async throws {
            let envelope: Data
            let file: Data
            do {
                envelope = try KeyDocumentTools.document(version: version, expires: try UnixTime.parse(signing.expires, option: "--expires"),
                                                         threshold: signing.threshold, keys: try signing.keys(), signers: try signing.signers())
                file = try KeyDocumentTools.append(envelope, to: nil)
            } catch {
                throw CLIError("making key document \(version)", error)
            }
            try InputFiles.write(file, to: out)
            Console.printError("wrote key document \(version) (\(signing.publicKey.count) keys, threshold \(signing.threshold)) to \(out)")
        }
    }

    struct Next: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Append the next version, signed by a threshold of the old keys and of the new.")

        @Option(help: "The key document file to extend (written in place unless --out is given).")
        var keys: String

        @OptionGroup var signing: SigningOptions

        @Option(help: "Where to write the extended file (default: --keys).")
        var out: String?

        func run() async throws {
            let existing = try InputFiles.data(keys, what: "key document file")
            let file: Data
            let version: Int64
            do {
                let chain = try KeyDocumentTools.verify(existing, keys: nil, threshold: 1, trustedVersion: 0, now: .distantPast)
                version = (chain.last?.version ?? 0) + 1
                let envelope = try KeyDocumentTools.document(version: version, expires: try UnixTime.parse(signing.expires, option: "--expires"),
                                                             threshold: signing.threshold, keys: try signing.keys(), signers: try signing.signers())
                file = try KeyDocumentTools.append(envelope, to: existing)
            } catch {
                throw CLIError("making the next key document", error)
            }
            try InputFiles.write(file, to: out ?? keys)
            Console.printError("appended key document \(version) (\(signing.publicKey.count) keys, threshold \(signing.threshold)) to \(out ?? keys)")
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a key document file as a store configured with the given keys would.")

        @Argument(help: "The key document file.")
        var file: String

        @Option(help: "A public key apps are configured with; repeat for each. Without any, the oldest document is trusted as it is.")
        var publicKey: [String] = []

        @Option(help: "The configured signature threshold.")
        var threshold: Int = 1

        @Option(help: "The configured trustedKeyVersion.")
        var trustedVersion: Int64 = 1

        @Option(help: "Judge the newest document's expiry as of this time (Unix seconds or ISO 8601; default: now).")
        var now: String?

        func run() async throws {
            let data = try InputFiles.data(file, what: "key document file")
            let keys = publicKey.isEmpty ? nil : try publicKey.map(InputFiles.publicKey)
            let asOf = try now.map { try UnixTime.parse($0, option: "--now") } ?? Int64(Date().timeIntervalSince1970)
            let chain: [KeyDocumentTools.Summary]
            do {
                chain = try KeyDocumentTools.verify(data, keys: keys, threshold: threshold, trustedVersion: trustedVersion,
                                                    now: Date(timeIntervalSince1970: TimeInterval(asOf)))
            } catch {
                throw CLIError("\(file): stores would refuse it", error)
            }
            for summary in chain {
                Console.print("version \(summary.version): threshold \(summary.threshold) of \(summary.keyIDs.count) keys, expires \(UnixTime.iso8601(summary.expires))")
                for keyID in summary.keyIDs { Console.print("  key \(keyID)") }
            }
            if chain.isEmpty {
                Console.print("nothing newer than version \(trustedVersion): stores keep their configured keys")
            }
            Console.print("key documents valid as of \(UnixTime.iso8601(asOf))")
        }
    }
}

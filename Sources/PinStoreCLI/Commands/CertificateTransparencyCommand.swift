import ArgumentParser
import Foundation
import PinStore
import PinStoreSigning

/// `pinstore ct`: the Certificate Transparency section of the signed list, and a chain's CT
/// status as stores judge it.
struct CertificateTransparencyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ct",
        abstract: "Make the Certificate Transparency section of the signed list, and check a chain's SCTs.",
        discussion: """
            Stores check Certificate Transparency against the logs the team's signed list names \
            (its "certificateTransparency" section), never against a list fetched from elsewhere. \
            `convert` makes that section from a log list in the v3 JSON shape (log_list.json), \
            checking the list's detached signature when given its key; `pinstore sign \
            --certificate-transparency` puts it in a list. Google's log list may not be used for \
            enforcement outside Chrome without Google's written permission: choose the logs your \
            partners' CAs log to (Apple's published log list, for example), and keep only their \
            operators with --operator.

            Examples:
              pinstore ct convert log_list.json --signature log_list.sig --signer-key log_list_pubkey.pem \\
                  --operator "Operator A" --operator "Operator B" --host api.partner.example=enforce --out ct.json
              pinstore sign --key list-signing.key.pem --cert api.pem --certificate-transparency ct.json --out list.json
              pinstore ct status --chain api-chain.pem --section ct.json
              pinstore ct status --host api.partner.example --section ct.json
            """,
        subcommands: [Convert.self, Status.self]
    )

    struct Convert: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make the certificateTransparency section from a log list in the v3 JSON shape.")

        @Argument(help: "The log list (log_list.json, v3 shape).")
        var logList: String

        @Option(help: "The log list's detached signature (log_list.sig, raw bytes).")
        var signature: String?

        @Option(help: "The key that signed the log list (PEM or DER SubjectPublicKeyInfo, P-256 or RSA); with --signature.")
        var signerKey: String?

        @Option(help: "Keep only this operator's logs; repeat for each (default: every operator).")
        var `operator`: [String] = []

        @Option(help: "A host or pattern and its mode, as name=off|reportOnly|enforce; repeat for each.")
        var host: [String] = []

        @Option(help: "The profile stores judge SCTs by: chrome or apple (default: each store's configuration, chrome unless set).")
        var profile: String?

        @Option(help: "Where to write the section (default: standard output).")
        var out: String?

        func validate() throws {
            if (signature == nil) != (signerKey == nil) {
                throw ValidationError("--signature and --signer-key go together.")
            }
        }

        func run() async throws {
            let json = try InputFiles.data(logList, what: "log list")
            let signatureBytes = try signature.map { try InputFiles.data($0, what: "log list signature") }
            let key = try signerKey.map { try Self.spki(InputFiles.data($0, what: "signer key")) }
            let hosts = try host.map(Self.parseHost)
            let chosenProfile: CertificateTransparencyProfile? = try profile.map { text in
                guard let known = CertificateTransparencyProfile(rawValue: text) else {
                    throw ValidationError("--profile is chrome or apple.")
                }
                return known
            }
            let section: Data
            do {
                section = try CertificateTransparencyTools.section(fromV3: json, signature: signatureBytes, signerKey: key,
                                                                    operators: `operator`, hosts: hosts, profile: chosenProfile)
            } catch {
                throw CLIError("\(logList)", error)
            }
            if let out {
                try InputFiles.write(section + Data("\n".utf8), to: out)
                Console.printError("wrote the certificateTransparency section to \(out)\(signatureBytes == nil ? " (the log list's signature was not checked)" : "")")
            } else {
                Console.write(section + Data("\n".utf8))
            }
        }

        /// `name=mode`.
        static func parseHost(_ text: String) throws -> (String, CertificateTransparencyMode) {
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let mode = CertificateTransparencyMode(rawValue: parts[1]) else {
                throw ValidationError("--host \(text): expected name=off, name=reportOnly or name=enforce.")
            }
            return (parts[0], mode)
        }

        /// DER, or the DER inside a PEM `PUBLIC KEY` block.
        static func spki(_ data: Data) throws -> Data {
            do {
                return try CertificateTransparencyTools.subjectPublicKeyInfo(fromFile: data)
            } catch {
                throw CLIError("reading the signer key", error)
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a chain's embedded SCTs and whether stores would find it compliant.")

        @Option(help: "The chain (PEM or DER file): the leaf, then its issuer.")
        var chain: String?

        @Option(help: "A TLS server (host[:port]) whose presented chain to check.")
        var host: String?

        @Option(help: "The certificateTransparency section (from `pinstore ct convert`), or a signed list that carries one.")
        var section: String

        @Option(help: "Judge by this profile (chrome or apple) instead of the section's.")
        var profile: String?

        func validate() throws {
            if (chain == nil) == (host == nil) {
                throw ValidationError("Give --chain or --host.")
            }
        }

        func run() async throws {
            var certificates: [X509Certificate]
            if let chain {
                do {
                    certificates = try X509Certificate.certificates(fileContents: try InputFiles.data(chain, what: "chain file"))
                } catch let error as CLIError {
                    throw error
                } catch {
                    throw CLIError("reading \(chain)", error)
                }
            } else {
                certificates = try await PresentedChainReader.read(try TLSEndpoint(parsing: host ?? ""))
            }
            let file = try InputFiles.data(section, what: "section file")
            let sectionJSON = try Self.section(in: file)
            let chosenProfile = try profile.map { text in
                guard let known = CertificateTransparencyProfile(rawValue: text) else { throw ValidationError("--profile is chrome or apple.") }
                return known
            }
            let result: (lines: [String], compliant: Bool)
            do {
                result = try CertificateTransparencyTools.status(chain: certificates.map(\.derRepresentation), section: sectionJSON,
                                                                 profile: chosenProfile)
            } catch {
                throw CLIError("checking the chain", error)
            }
            for line in result.lines { Console.print(line) }
            if !result.compliant { throw ExitCode.failure }
        }

        /// The section itself, or the one a signed list carries.
        static func section(in file: Data) throws -> Data {
            if let object = try? JSONSerialization.jsonObject(with: file) as? [String: Any], let inner = object["certificateTransparency"] {
                return try JSONSerialization.data(withJSONObject: inner)
            }
            return file
        }
    }
}

import ArgumentParser
import Foundation
import PinStore

/// `pinstore sign`: a complete signed static-mode list.
struct SignCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign a complete static-mode fingerprint list.",
        discussion: """
            Entries come from certificate files (--cert: the first certificate of each file, the
            leaf), from what TLS servers present (--host: the leaf, NOT verified), or are given
            directly (--entry name,fingerprint,expires with the fingerprint in Base64 or hex and
            expires in Unix seconds or ISO 8601). An entry made from a certificate is named after
            its subject CN (its first DNS name when it has no CN) and expires at the
            certificate's notAfter unless --expires says otherwise.

            Each entry is signed over name&base64(fingerprint)&expires (ECDSA P-256, SHA-256,
            DER, Base64), the format deployed clients verify. To rotate a certificate without
            downtime, sign a list holding both the current and the next certificate before the
            next one is deployed.

            Examples:
              pinstore sign --key list-signing.key.pem --cert api.pem next-api.pem --out list.json
              pinstore sign --key list-signing.key.pem --host api.example.com --out list.json
              pinstore sign --key list-signing.key.pem --entry api.example.com,kqN/vV4hpTqVxxbhFE9EL1grlND6/Gc+tnF6TrUaiKc=,1710460799
            """
    )

    @Option(help: "The list-signing private key (PEM).")
    var key: String

    @Option(help: "A file whose first line decrypts the key.")
    var passphraseFile: String?

    @Option(parsing: .upToNextOption, help: "Certificate files (PEM or DER) to pin.")
    var cert: [String] = []

    @Option(parsing: .upToNextOption, help: "TLS servers (host[:port]) whose presented leaf to pin.")
    var host: [String] = []

    @Option(parsing: .upToNextOption, help: "Entries as name,fingerprint,expires.")
    var entry: [String] = []

    @Option(help: "Expiry for entries made from certificates and hosts (Unix seconds or ISO 8601; default: each certificate's notAfter).")
    var expires: String?

    @Option(help: "Where to write the list (default: standard output).")
    var out: String?

    func validate() throws {
        if cert.isEmpty, host.isEmpty, entry.isEmpty {
            throw ValidationError("Give at least one --cert, --host or --entry.")
        }
    }

    func run() async throws {
        let signingKey = try InputFiles.privateKey(key, passphraseFile: passphraseFile)
        let expiresOverride = try expires.map { try UnixTime.parse($0, option: "--expires") }
        var entries: [FingerprintEntry] = []
        for path in cert {
            let data = try InputFiles.data(path, what: "certificate file")
            let certificates: [X509Certificate]
            do {
                certificates = try X509Certificate.certificates(fileContents: data)
            } catch {
                throw CLIError("reading \(path)", error)
            }
            if certificates.count > 1 {
                Console.printError("note: \(path) holds \(certificates.count) certificates; pinning the first (the leaf)")
            }
            entries.append(try entry(for: certificates[0], origin: path, expires: expiresOverride))
        }
        for target in host {
            let endpoint = try TLSEndpoint(parsing: target)
            let chain = try await PresentedChainReader.read(endpoint)
            Console.printError("note: pinning the leaf \(endpoint) presented; it was NOT verified, check the fingerprint out of band")
            entries.append(try entry(for: chain[0], origin: target, expires: expiresOverride))
        }
        for text in entry {
            entries.append(try Self.parseEntry(text))
        }
        let now = Int64(Date().timeIntervalSince1970)
        for item in entries where item.expires <= now {
            Console.printError("warning: the entry for \(item.name) expired at \(UnixTime.iso8601(item.expires)); clients will ignore it")
        }
        let json: Data
        do {
            json = try FingerprintListSigner(privateKey: signingKey).staticList(entries)
        } catch {
            throw CLIError("signing", error)
        }
        if let out {
            try InputFiles.write(json, to: out)
            Console.printError("signed \(entries.count) entr\(entries.count == 1 ? "y" : "ies") into \(out)")
        } else {
            Console.write(json)
        }
    }

    private func entry(for certificate: X509Certificate, origin: String, expires: Int64?) throws -> FingerprintEntry {
        guard let entry = CertificateReport.entry(for: certificate, expires: expires) else {
            throw CLIError("\(origin): the certificate has neither a subject CN nor a DNS name to pin it under; use --entry")
        }
        return entry
    }

    /// Parses `name,fingerprint,expires`; the fingerprint is Base64 (44 characters) or hex (64).
    static func parseEntry(_ text: String) throws -> FingerprintEntry {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard parts.count == 3 else {
            throw CLIError("--entry \"\(text)\": expected name,fingerprint,expires")
        }
        let fingerprint: Data
        if let hex = Self.hexBytes(parts[1]) {
            fingerprint = hex
        } else if let base64 = Data(base64Encoded: parts[1]), base64.base64EncodedString() == parts[1] {
            fingerprint = base64
        } else {
            throw CLIError("--entry \"\(text)\": the fingerprint is neither Base64 nor hex")
        }
        guard fingerprint.count == 32 else {
            throw CLIError("--entry \"\(text)\": the fingerprint is \(fingerprint.count) bytes; a SHA-256 fingerprint is 32")
        }
        return FingerprintEntry(name: parts[0], fingerprint: fingerprint, expires: try UnixTime.parse(parts[2], option: "--entry expires"))
    }

    private static func hexBytes(_ text: String) -> Data? {
        let clean = text.replacingOccurrences(of: ":", with: "")
        guard clean.count == 64 else { return nil }
        var bytes: [UInt8] = []
        var index = clean.startIndex
        while index < clean.endIndex {
            let next = clean.index(index, offsetBy: 2)
            guard let byte = UInt8(clean[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return Data(bytes)
    }
}

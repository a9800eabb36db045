import ArgumentParser
import Foundation
import PinStore

/// `pinstore fingerprint`: what a certificate file holds or a server presents, in the forms
/// pin lists and Apple's `NSPinnedDomains` need.
struct FingerprintCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fingerprint",
        abstract: "Show the fingerprints of certificates in a file or presented by a TLS server.",
        discussion: """
            For each certificate: subject common name, DNS and IP subject alternative names, \
            issuer, expiry, the certificate fingerprint (SHA-256 of the DER, Base64 and hex: the \
            value a pin list carries), SPKI-SHA256-BASE64 (the value Apple's NSPinnedDomains wants), \
            and the list entry `pinstore sign --entry` takes.

            A TARGET that names an existing file is read as PEM (one certificate or a bundle) or \
            DER. Anything else is a TLS server, host[:port] (port 443 by default), whose presented \
            chain is shown WITHOUT being verified: this is an inspection tool.

            Examples:
              pinstore fingerprint Fixtures/pki/localhost.pem
              pinstore fingerprint server.der
              pinstore fingerprint api.example.com
              pinstore fingerprint 127.0.0.1:8443 --server-name localhost
              pinstore fingerprint api.example.com --spki        # sha256/<SPKI> pins, OkHttp-style
              pinstore fingerprint api.example.com --spki --ca   # the CA identities only

            --spki prints one line per certificate: sha256/<SPKI-SHA256-BASE64>, then the subject, \
            ready for a PinPolicy, an NSPinnedDomains entry or `pinstore sign --spki`. --ca keeps \
            the certificates above the leaf (CA identities) only.
            """
    )

    @Argument(help: "A certificate file (PEM or DER) or a TLS server as host[:port].")
    var target: String

    @Option(help: "Host name to send as SNI when TARGET is a server (default: its host name; none for an IP address).")
    var serverName: String?

    @Option(help: "Seconds to wait for the connection and handshake when TARGET is a server.")
    var timeout: Double = 10

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Flag(help: "Print only the SPKI pins, one line per certificate: sha256/<Base64> subject.")
    var spki = false

    @Flag(help: "Show only the certificates above the leaf (CA identities).")
    var ca = false

    func run() async throws {
        let certificates: [X509Certificate]
        let origin: String
        if FileManager.default.fileExists(atPath: target) {
            let data = try InputFiles.data(target, what: "certificate file")
            do {
                certificates = try X509Certificate.certificates(fileContents: data)
            } catch {
                throw CLIError("reading \(target)", error)
            }
            origin = target
        } else {
            let endpoint = try TLSEndpoint(parsing: target)
            certificates = try await PresentedChainReader.read(endpoint, serverName: serverName, timeout: timeout)
            origin = "\(endpoint) (presented chain, NOT verified: inspection only)"
        }
        if spki {
            for (index, certificate) in certificates.enumerated() where !ca || index > 0 {
                Console.print("sha256/\(certificate.spkiSHA256Base64) \(certificate.subject)")
            }
        } else if json {
            Console.print(try CertificateReport.json(ca ? Array(certificates.dropFirst()) : certificates))
        } else {
            Console.print("\(origin): \(certificates.count) certificate\(certificates.count == 1 ? "" : "s")")
            for (index, certificate) in certificates.enumerated() where !ca || index > 0 {
                Console.print()
                Console.print(CertificateReport.text(certificate, index: index, count: certificates.count))
            }
        }
    }
}

/// Formats what the tool shows about one certificate.
enum CertificateReport {
    /// The list entry a certificate yields: name = subject CN (else the first DNS name),
    /// expires = notAfter in Unix seconds, as the deployed signing tool derives it.
    static func entry(for certificate: X509Certificate, expires: Int64? = nil) -> FingerprintEntry? {
        guard let name = entryName(certificate) else { return nil }
        return FingerprintEntry(name: name, fingerprint: certificate.fingerprint,
                                expires: expires ?? Int64(certificate.notAfter.timeIntervalSince1970))
    }

    static func entryName(_ certificate: X509Certificate) -> String? {
        if let cn = certificate.commonName, !cn.isEmpty { return cn }
        return certificate.dnsNames.first
    }

    static func text(_ certificate: X509Certificate, index: Int, count: Int) -> String {
        let notAfter = Int64(certificate.notAfter.timeIntervalSince1970)
        let sans = certificate.dnsNames.map { "DNS:\($0)" } + certificate.ipAddresses.map { "IP:\($0)" }
        let role = index == 0 ? (count > 1 ? " (leaf)" : "") : " (depth \(index))"
        var lines = [
            "certificate \(index + 1) of \(count)\(role)",
            "  subject CN:          \(certificate.commonName ?? "(none)")",
            "  SANs:                \(sans.isEmpty ? "(none)" : sans.joined(separator: ", "))",
            "  subject:             \(certificate.subject)",
            "  issuer:              \(certificate.issuer)",
            "  not before:          \(UnixTime.iso8601(Int64(certificate.notBefore.timeIntervalSince1970)))",
            "  expires:             \(UnixTime.iso8601(notAfter)) (\(notAfter))",
            "  fingerprint:         \(certificate.fingerprintBase64)",
            "  fingerprint (hex):   \(certificate.fingerprintHex)",
            "  SPKI-SHA256-BASE64:  \(certificate.spkiSHA256Base64)",
        ]
        if index == 0, let entry = entry(for: certificate) {
            lines.append("  list entry:          \(entry.name),\(entry.fingerprint.base64EncodedString()),\(entry.expires)")
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ certificates: [X509Certificate]) throws -> String {
        struct Item: Encodable {
            let commonName: String?
            let dnsNames: [String]
            let ipAddresses: [String]
            let subject: String
            let issuer: String
            let notBefore: Int64
            let expires: Int64
            let fingerprint: String
            let fingerprintHex: String
            let spkiSHA256Base64: String
            let entryName: String?
        }
        let items = certificates.map { c in
            Item(commonName: c.commonName, dnsNames: c.dnsNames, ipAddresses: c.ipAddresses,
                 subject: c.subject, issuer: c.issuer,
                 notBefore: Int64(c.notBefore.timeIntervalSince1970), expires: Int64(c.notAfter.timeIntervalSince1970),
                 fingerprint: c.fingerprintBase64, fingerprintHex: c.fingerprintHex,
                 spkiSHA256Base64: c.spkiSHA256Base64, entryName: entryName(c))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(items), as: UTF8.self)
    }
}

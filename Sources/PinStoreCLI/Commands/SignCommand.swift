import ArgumentParser
import Foundation
import PinStore
import PinStoreSigning

/// `pinstore sign`: a complete signed static-mode list.
struct SignCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign a complete static-mode fingerprint list.",
        discussion: """
            Entries come from certificate files (--cert: the first certificate of each file, the \
            leaf), from what TLS servers present (--host: the leaf, after verifying the chain \
            against the system trust store or --ca-file and the host name), or are given \
            directly (--entry name,fingerprint,expires with the fingerprint in Base64 or hex and \
            expires in Unix seconds or ISO 8601). An entry made from a certificate file is named \
            after its subject CN (its first DNS name when it has no CN); an entry made from \
            --host is named after the host (or --name). Entries expire at the certificate's \
            notAfter unless --expires says otherwise. --insecure pins a chain that does not \
            verify (a warning says so): check its fingerprint out of band.

            Each entry is signed over name&base64(fingerprint)&expires (ECDSA P-256, SHA-256, \
            DER, Base64), the format deployed clients verify. The list also gets a whole-list \
            signature ("listSignature", over the exact body with its "timestamp") that deployed \
            clients ignore and PinStore checks: it stops replayed, spliced or re-depthed lists \
            (require it with requireListSignature). --no-list-signature leaves it out. To rotate a certificate without \
            downtime, sign a list holding both the current and the next certificate before the \
            next one is deployed.

            Examples:
              pinstore sign --key list-signing.key.pem --cert api.pem next-api.pem --out list.json
              pinstore sign --key list-signing.key.pem --host api.example.com --out list.json
              pinstore sign --key list-signing.key.pem --host 10.0.0.5:8443 --ca-file private-ca.pem --name api.internal
              pinstore sign --key list-signing.key.pem --entry api.example.com,kqN/vV4hpTqVxxbhFE9EL1grlND6/Gc+tnF6TrUaiKc=,1710460799
              pinstore sign --key list-signing.key.pem --spki --cert api.pem --out list.json
              pinstore sign --key list-signing.key.pem --ca issuing-ca.pem --name api.example.com --out list.json

            --spki pins the public key (SPKI SHA-256) of each --cert and --host leaf instead of the \
            whole certificate ("pin": "spki"): a renewal with the same key stays pinned. --ca pins \
            the key of a CA certificate for --name ("pin": "ca-spki"): any leaf under that CA is \
            accepted. Both need the whole-list signature (PinStore drops key pins that no signature \
            covers), so they cannot be combined with --no-list-signature.

            --revoke-key and --revoke-cert add a "revocations" section: every store refuses a chain \
            holding a revoked key or certificate, whatever pin matches, in report-only mode too. \
            --revoke-key takes a certificate file (its key) or a Base64 SPKI SHA-256: for a stolen \
            key, revoke the key. --revoke-cert takes the certificate followed by its issuer (a chain \
            file): its SHA-256 and its issuer key and serial number, which still match when the \
            certificate's signature is re-encoded. An entry made from a certificate that cannot issue \
            others is marked "leaf", which lets AsyncHTTPClient (leaf only) rule it out; a CA key or \
            a bare digest makes AsyncHTTPClient refuse what it cannot check. Needs the whole-list \
            signature. --revoke-key-from-host and --revoke-cert-from-host (HOST[:PORT]) take the \
            leaf a TLS server presents instead of a file (--revoke-cert-from-host also needs the \
            issuer the server sends after it). That chain is verified as --host's is (--ca-file, \
            --server-name; --insecure to revoke anyway): someone on the network path could \
            otherwise present another certificate and keep the stolen one accepted. Check the \
            fingerprint, names and dates printed for each; where the path may be hostile, take the \
            certificate from the server's own files (--revoke-cert). Example:
              pinstore sign --key list-signing.key.pem --ca issuing-ca.pem --name api.example.com --revoke-cert stolen-leaf-and-issuer.pem
              pinstore sign --key list-signing.key.pem --ca issuing-ca.pem --name api.example.com --revoke-key-from-host compromised.example.com

            --crl-host NAME=MODE (repeatable) writes the list's "crl" section: the CRL mode of a \
            host or a "*." pattern (the most specific entry applies), one of off, reportOnly, \
            enforceSoftFail (refuses a revoked certificate, lets the connection through when the \
            CRL cannot be had) or enforceHardFail (refuses both); hosts it does not name keep each store's crlMode. It is \
            checked with the stores' own reader (an unknown mode, or two entries equally specific \
            for some name, is refused here) and needs the whole-list signature. Give the list a \
            new --list-version whenever the section changes. Example:
              pinstore sign --key list-signing.key.pem --ca issuing-ca.pem --name api.example.com --crl-host api.example.com=enforceSoftFail --crl-host '*.pay.example=enforceHardFail'
            """
    )

    @Option(help: "The list-signing private key (PEM). Repeat for a key set with a threshold: the first key signs each entry and \"listSignature\", the others add labelled whole-list signatures (\"listSignatures\").")
    var key: [String]

    @Option(help: "A file whose first line decrypts the key.")
    var passphraseFile: String?

    @Option(parsing: .upToNextOption, help: "Certificate files (PEM or DER) to pin.")
    var cert: [String] = []

    @Option(parsing: .upToNextOption, help: "TLS servers (host[:port]) whose presented leaf to pin.")
    var host: [String] = []

    @Option(help: "Trust anchors (PEM) for verifying --host chains instead of the system trust store.")
    var caFile: String?

    @Option(help: "The entry name for --host (default: --server-name, else the host as given).")
    var name: String?

    @Flag(help: "Pin (--host) or revoke (--revoke-*-from-host) what a server presents even when its chain or host name does not verify.")
    var insecure = false

    @Option(help: "The server name to send (SNI) and verify for --host and --revoke-*-from-host, e.g. when connecting to an address (default: the host as given).")
    var serverName: String?

    @Option(parsing: .upToNextOption, help: "Entries as name,fingerprint,expires.")
    var entry: [String] = []

    @Option(help: "Expiry for entries made from certificates and hosts (Unix seconds or ISO 8601; default: each certificate's notAfter).")
    var expires: String?

    @Option(help: "The list's timestamp, covered by its whole-list signature (Unix seconds or ISO 8601; default: now). Stores refuse a list older than the newest they have seen.")
    var timestamp: String?

    @Flag(help: "Write the deployed format only: per-entry signatures, no whole-list signature and timestamp.")
    var noListSignature = false

    @Option(help: "The whole list's version, covered by its whole-list signature: stores refuse a lower one (rollback) and ignore an equal one.")
    var listVersion: Int64?

    @Option(help: "When the whole list stops counting as fresh (Unix seconds or ISO 8601): stores refuse it after that and apply their expired-list policy to its pins.")
    var listExpires: String?

    @Option(help: "A certificateTransparency section (from `pinstore ct convert`) for the list to carry: the CT logs stores check SCTs against, and per-host modes. Give the list a new --list-version whenever the section changes: stores ignore a list whose version equals the one in force.")
    var certificateTransparency: String?

    @Flag(help: "Pin the public key (SPKI SHA-256) of each --cert and --host leaf instead of the certificate.")
    var spki = false

    @Option(parsing: .upToNextOption, help: "CA certificate files whose public key to pin for --name (any leaf under the CA).")
    var ca: [String] = []

    @Option(help: "Where to write the list (default: standard output).")
    var out: String?

    @Option(parsing: .upToNextOption, help: "Keys to revoke for every host: a certificate file (its key) or a Base64 SPKI SHA-256.")
    var revokeKey: [String] = []

    @Option(parsing: .upToNextOption, help: "Certificate files whose first certificate to revoke for every host (its SHA-256; with its issuer next in the file, also issuer key and serial).")
    var revokeCert: [String] = []

    @Option(parsing: .upToNextOption, help: "TLS servers (host[:port]) whose presented leaf's key to revoke for every host.")
    var revokeKeyFromHost: [String] = []

    @Option(parsing: .upToNextOption, help: "TLS servers (host[:port]) whose presented leaf to revoke for every host (its SHA-256, and issuer key and serial: the server must send the issuer).")
    var revokeCertFromHost: [String] = []

    @Option(help: "A host or *. pattern and its CRL mode, as NAME=MODE (off, reportOnly, enforceSoftFail, enforceHardFail), for the list's crl section. Repeatable.")
    var crlHost: [String] = []

    func validate() throws {
        if key.isEmpty {
            throw ValidationError("Give at least one --key.")
        }
        if cert.isEmpty, host.isEmpty, entry.isEmpty, ca.isEmpty {
            throw ValidationError("Give at least one --cert, --host, --ca or --entry.")
        }
        if !ca.isEmpty, name == nil {
            throw ValidationError("--ca needs --name: the host name the CA key is pinned for.")
        }
        if name != nil, host.count != 1, ca.isEmpty {
            throw ValidationError("--name names the entry of exactly one --host.")
        }
        if noListSignature, key.count > 1 || listVersion != nil || listExpires != nil || certificateTransparency != nil {
            throw ValidationError("Several --key, --list-version, --list-expires and --certificate-transparency need the whole-list signature.")
        }
        if noListSignature, !revokeKey.isEmpty || !revokeCert.isEmpty || !revokeKeyFromHost.isEmpty || !revokeCertFromHost.isEmpty {
            throw ValidationError("--revoke-key, --revoke-cert and their -from-host forms need the whole-list signature: stores refuse a revocations section no signature covers.")
        }
        if noListSignature, !crlHost.isEmpty {
            throw ValidationError("--crl-host needs the whole-list signature: stores refuse a crl section no signature covers (whoever answers could otherwise turn the check off).")
        }
        if (spki || !ca.isEmpty), noListSignature {
            throw ValidationError("--spki and --ca need the whole-list signature: PinStore drops key pins that no signature covers.")
        }
    }

    func run() async throws {
        let signingKeys = try key.map { try InputFiles.privateKey($0, passphraseFile: passphraseFile) }
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
            entries.append(try keyPin(try entry(for: certificates[0], origin: path, expires: expiresOverride), certificates[0]))
        }
        for path in ca {
            let data = try InputFiles.data(path, what: "CA certificate file")
            let certificates: [X509Certificate]
            do {
                certificates = try X509Certificate.certificates(fileContents: data)
            } catch {
                throw CLIError("reading \(path)", error)
            }
            let authority = certificates[0]
            entries.append(FingerprintEntry(name: name ?? "", fingerprint: try Self.spkiDigest(authority),
                                            expires: expiresOverride ?? Int64(authority.notAfter.timeIntervalSince1970), kind: .caPublicKey))
        }
        for target in host {
            let endpoint = try TLSEndpoint(parsing: target)
            let chain = try await verifiedPresentedChain(target, option: "--host", action: "pin")
            let leaf = try entry(for: chain[0], origin: target, expires: expiresOverride)
            entries.append(try keyPin(FingerprintEntry(name: name ?? serverName ?? endpoint.host, fingerprint: leaf.fingerprint, expires: leaf.expires), chain[0]))
        }
        for text in entry {
            entries.append(try Self.parseEntry(text))
        }
        let now = Int64(Date().timeIntervalSince1970)
        for item in entries where item.expires <= now {
            Console.printError("warning: the entry for \(item.name) expired at \(UnixTime.iso8601(item.expires)); clients will ignore it")
        }
        let section = try certificateTransparency.map { try InputFiles.data($0, what: "certificateTransparency section") }
        let revocations = try await revocationEntries()
        let crl = try crlSection()
        let json: Data
        do {
            let listTimestamp = noListSignature ? nil : try timestamp.map { try UnixTime.parse($0, option: "--timestamp") } ?? now
            let listExpiry = try listExpires.map { try UnixTime.parse($0, option: "--list-expires") }
            json = try FingerprintListSigner(privateKey: signingKeys[0], additionalKeys: Array(signingKeys.dropFirst()))
                .staticList(entries, timestamp: listTimestamp, version: listVersion, expires: listExpiry, certificateTransparency: section,
                            revocations: revocations, crl: crl)
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

    /// The `revocations` section of --revoke-key, --revoke-cert and their -from-host forms, in
    /// that order.
    private func revocationEntries() async throws -> [ListRevocations.Wire] {
        var revocations: [ListRevocations.Wire] = []
        func certificates(_ path: String) throws -> [X509Certificate] {
            let data = try InputFiles.data(path, what: "certificate file")
            do {
                return try X509Certificate.certificates(fileContents: data)
            } catch {
                throw CLIError("reading \(path)", error)
            }
        }
        for value in revokeKey {
            if let digest = Data(base64Encoded: value), digest.count == 32, digest.base64EncodedString() == value {
                revocations.append(.key(spkiSHA256: digest))
            } else if FileManager.default.fileExists(atPath: value) {
                revocations.append(.key(of: try certificates(value)[0]))
            } else {
                throw CLIError("--revoke-key \(value): neither a certificate file nor the Base64 of a 32-byte SPKI SHA-256")
            }
        }
        for path in revokeCert {
            let chain = try certificates(path)
            guard chain.count > 1 else {
                throw CLIError("--revoke-cert \(path) holds one certificate; give it followed by its issuer (a chain file): its SHA-256 alone can be changed by re-encoding its signature, its issuer key and serial number cannot")
            }
            revocations += try Self.certificateRevocations(chain, origin: "--revoke-cert \(path)")
        }
        for target in revokeKeyFromHost {
            let leaf = try await verifiedPresentedChain(target, option: "--revoke-key-from-host", action: "revoke")[0]
            Console.printError("revoking the key (SPKI SHA-256 \(leaf.spkiSHA256Base64)) of \(Self.describe(leaf)), presented by \(target)")
            revocations.append(.key(of: leaf))
        }
        for target in revokeCertFromHost {
            let chain = try await verifiedPresentedChain(target, option: "--revoke-cert-from-host", action: "revoke")
            guard chain.count > 1 else {
                throw CLIError("--revoke-cert-from-host \(target) presented its leaf alone; its SHA-256 alone can be changed by re-encoding its signature, so the issuer is needed: revoke from a chain file (--revoke-cert), or revoke the key (--revoke-key-from-host)")
            }
            Console.printError("revoking the certificate (SHA-256 \(chain[0].fingerprintBase64), serial \(chain[0].serialNumber)) of \(Self.describe(chain[0])), issued by \(chain[1].subject), presented by \(target)")
            revocations += try Self.certificateRevocations(chain, origin: "--revoke-cert-from-host \(target)")
        }
        return revocations
    }

    /// The revocations of `chain[0]`, whose issuer is `chain[1]`: its SHA-256, and its issuer
    /// key and serial number. The second entry is the one that holds: the certificate's digest
    /// changes when someone re-encodes its signature (an ECDSA signature's s and n - s both
    /// verify), and the serial under the issuer's key does not. So the issuer must really be
    /// the certificate's issuer.
    private static func certificateRevocations(_ chain: [X509Certificate], origin: String) throws -> [ListRevocations.Wire] {
        guard chain[0].isIssued(by: chain[1]) else {
            throw CLIError("\(origin): the second certificate did not issue the first (OpenSSL); give the certificate followed by its issuer")
        }
        return [.certificate(chain[0]), .issuerSerial(of: chain[0], issuerKeySHA256: try spkiDigest(chain[1]))]
    }

    /// The chain `target` (host[:port]) presents, verified against the trust roots (--ca-file
    /// or the system's) for --server-name or the host, unless --insecure. Revoking needs it as
    /// much as pinning: an unverified chain lets whoever sits on the path choose what is
    /// revoked, and keep the stolen certificate accepted.
    private func verifiedPresentedChain(_ target: String, option: String, action: String) async throws -> [X509Certificate] {
        let endpoint = try TLSEndpoint(parsing: target)
        let name = serverName ?? endpoint.host
        let chain = try await PresentedChainReader.read(endpoint, serverName: serverName)
        guard !chain.isEmpty else { throw CLIError("\(option) \(target) presented no certificate") }
        do {
            _ = try ChainValidator(trustRoots: try hostTrustRoots()).validate(chain: chain.map(\.derRepresentation), hostname: name)
        } catch {
            guard insecure else {
                throw CLIError("\(endpoint) presented a chain that does not verify for \(name) (\(error)); refusing to \(action) it. Use --ca-file for a private CA, --server-name for an address, or --insecure to \(action) it anyway")
            }
            Console.printError("warning: \(action == "pin" ? "pinning" : "revoking") the leaf \(endpoint) presented although it does NOT verify (\(error)); check its fingerprint out of band")
        }
        return chain
    }

    /// A certificate as an operator checks it: subject, DNS names and validity.
    private static func describe(_ certificate: X509Certificate) -> String {
        let names = certificate.dnsNames + certificate.ipAddresses
        let format = ISO8601DateFormatter()
        return "\(certificate.subject) (names: \(names.isEmpty ? "none" : names.joined(separator: ", ")); valid \(format.string(from: certificate.notBefore)) to \(format.string(from: certificate.notAfter)))"
    }

    /// The `crl` section of --crl-host, in the order given; nil without any. Only split here:
    /// the modes and names are judged by the stores' reader when the signer reads the list back.
    private func crlSection() throws -> CRLHostList.Wire? {
        guard !crlHost.isEmpty else { return nil }
        var hosts: [CTLogList.Wire.Host] = []
        for value in crlHost {
            guard let equals = value.firstIndex(of: "="), equals != value.startIndex, value.index(after: equals) != value.endIndex else {
                throw CLIError("--crl-host \(value): expected NAME=MODE, e.g. api.example.com=enforceSoftFail (modes: \(CRLCheckMode.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            hosts.append(CTLogList.Wire.Host(name: String(value[..<equals]), mode: String(value[value.index(after: equals)...])))
        }
        return CRLHostList.Wire(hosts: hosts)
    }

    /// `entry` as a key pin on `certificate` with --spki; unchanged otherwise.
    private func keyPin(_ entry: FingerprintEntry, _ certificate: X509Certificate) throws -> FingerprintEntry {
        guard spki else { return entry }
        return FingerprintEntry(name: entry.name, fingerprint: try Self.spkiDigest(certificate), expires: entry.expires, kind: .publicKey)
    }

    /// SHA-256 of the certificate's SubjectPublicKeyInfo.
    static func spkiDigest(_ certificate: X509Certificate) throws -> Data {
        guard let digest = Data(base64Encoded: certificate.spkiSHA256Base64) else {
            throw CLIError("the SPKI digest of \(certificate.subject) could not be read")
        }
        return digest
    }

    /// The anchors --host chains are verified against: --ca-file, or the system trust store.
    private func hostTrustRoots() throws -> TrustRoots {
        guard let caFile else { return .system }
        let data = try InputFiles.data(caFile, what: "CA file")
        do {
            return .anchors(try X509Certificate.certificates(fileContents: data))
        } catch {
            throw CLIError("reading \(caFile)", error)
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

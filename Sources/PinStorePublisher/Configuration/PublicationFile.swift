import Foundation

/// The declarative publication file: which partners to watch and how to pin them, which keys
/// sign, the rules' numbers, and where the list goes. JSON; every key not listed here is
/// refused with ``PublisherError/Code/unknownKey`` naming its path (`partners[2].sni2`), so a
/// typo never leaves a default silently in force. Relative paths resolve against the folder
/// holding the file.
///
/// ```json
/// {
///   "partners": [
///     {"id": "payments", "host": "api.payments.example", "pin": "leafKey",
///      "requireCertificateTransparency": true, "allowedCAs": ["cas/le-root-x1.pem"]}
///   ],
///   "signingKeys": [{"file": "keys/publisher.pem"},
///                   {"command": ["/usr/local/bin/kms-sign", "--key", "pins"], "publicKey": "keys/kms.pub.pem"}],
///   "threshold": 2,
///   "expires": "7d", "resignInterval": "1d",
///   "probeInterval": "10m", "minimumSightings": 3, "minimumSpan": "20m",
///   "gracePeriod": "14d", "minimumRemainingValidity": "1d",
///   "certificateTransparencySection": "ct/section.json",
///   "revocations": "revocations.json",
///   "crl": "crl.json",
///   "outputFolder": "public", "stateFolder": "state"
/// }
/// ```
///
/// Durations are seconds (`600`) or a whole number with a unit (`"90s"`, `"10m"`, `"2h"`,
/// `"45d"`). The defaults, each chosen for a team that would rather wait than pin the wrong thing:
///
/// | key | default | why |
/// |---|---|---|
/// | `port` | 443 | |
/// | `sni` | the host | |
/// | `pin` | `leafCertificate` | the only kind the deployed (Wultra) clients read |
/// | `anchors` | `"system"` | or a PEM file of the partner's private roots |
/// | `requireCertificateTransparency` | false | true needs `certificateTransparencySection` |
/// | `allowedCAs` | none | CAs (SPKI SHA-256 Base64, or PEM files) beyond those already published for the partner |
/// | `threshold` | 1 | distinct keys on every list |
/// | `expires` | `"7d"` | a list older than this is refused by clients (a freeze attack ends) |
/// | `resignInterval` | `"1d"` | re-signed with no change this often; must be below `expires` |
/// | `probeInterval` | `"10m"` | |
/// | `minimumSightings` (K) | 3 | a certificate seen once (a transient interception) is never published |
/// | `minimumSpan` (T) | `"20m"` | K sightings must span this much time (K = 3 probes 10 minutes apart) |
/// | `publishOnAgreement` | true where `threshold` is 2 or more | a certificate that `threshold` vantage points each see in the same round is published without waiting for K over T (rules 1 to 4 still apply); false keeps K over T on top of the quorum |
/// | `reportEndpoint` | none | `"ADDRESS:PORT"` where the publisher accepts the stores' pin-failure reports (point `reportURI` at `http://ADDRESS:PORT/pin-reports`); a report only makes it probe the partner now |
/// | `gracePeriod` | `"14d"` | two of the clients' default 7-day update intervals |
/// | `minimumRemainingValidity` | `"1d"` | a certificate expiring sooner is not worth pinning |
/// | `announcementLifetime` | `"90d"` | how long an announced key stays pinned at most; once it has been deployed (seen presented) and is no longer presented, its pin is withdrawn after `gracePeriod` instead |
/// | `signingCommandTimeout` | `"30s"` | a signing command still running then is killed |
/// | `afterPublish` | none | argv of a command run after each list is published (a deploy hook: sync the output folder to object storage or a CDN), with the output folder's absolute path as its last argument; run again each round until it exits 0 |
/// | `afterPublishTimeout` | `"5m"` | an after-publish command still running then is killed (and run again next round) |
/// | `listFileName` | `"list.json"` | the list's name in `outputFolder` |
/// | `revocations` | none | a JSON file holding the `revocations` section (an array, as lists carry it) signed into every list; read at start, so restart the publisher after changing it (the next list then goes out at once); vantage points co-sign only a section equal to their own |
/// | `crl` | none | a JSON file holding the `crl` section (`{"hosts": [{"name", "mode"}]}`, as lists carry it: per-host CRL modes) signed into every list; read at start like `revocations`; vantage points co-sign only a section equal to their own |
/// | `vantagePoint` | none | `{"name", "proposalsFolder", "proposalTimeout": "1h"}` for several publishers |
///
/// Signing keys are key files or commands, never key material: a value that looks like a PEM
/// block or Base64 key where a path belongs, or a key named like `privateKey`, is refused with
/// ``PublisherError/Code/inlineKeyMaterial``.
public struct PublicationFile: Sendable {
    /// What to pin for a partner.
    package enum PinKind: String, Sendable, Codable, CaseIterable {
        /// SHA-256 of the leaf certificate (the deployed clients' only kind).
        case leafCertificate
        /// SHA-256 of the leaf's SubjectPublicKeyInfo: survives renewals that keep the key.
        case leafKey
        /// SHA-256 of the issuing CA's SubjectPublicKeyInfo: survives every leaf rotation within that CA.
        case issuerKey
    }

    /// One partner entry.
    package struct Partner: Sendable, Hashable {
        package var id: String
        package var host: String
        package var port: Int = 443
        package var sni: String?
        package var pin: PinKind = .leafCertificate
        /// `"system"` or a PEM file path.
        package var anchors: String = "system"
        package var requireCertificateTransparency = false
        /// SPKI SHA-256 Base64 values or PEM file paths.
        package var allowedCAs: [String] = []

    package init(id: String, host: String, port: Int = 443, sni: String? = nil, pin: PublicationFile.PinKind = .leafCertificate,
                 anchors: String = "system", requireCertificateTransparency: Bool = false, allowedCAs: [String] = []) {
        self.id = id
        self.host = host
        self.port = port
        self.sni = sni
        self.pin = pin
        self.anchors = anchors
        self.requireCertificateTransparency = requireCertificateTransparency
        self.allowedCAs = allowedCAs
    }
    }

    /// One signing key: a key file, or a command that signs (an HSM or KMS keeps the key).
    package struct SigningKey: Sendable, Hashable {
        /// A PEM private key file.
        package var file: String?
        /// argv of a command that reads the bytes to sign on stdin and prints the signature.
        package var command: [String]?
        /// The command's public key (a PEM/DER file or Base64 X9.63 point): its output is
        /// checked against it.
        package var publicKey: String?

    package init(file: String? = nil, command: [String]? = nil, publicKey: String? = nil) {
        self.file = file
        self.command = command
        self.publicKey = publicKey
    }
    }

    /// Several publishers sharing one proposals folder.
    package struct VantagePoint: Sendable, Hashable {
        /// This publisher's name (in proposals and logs).
        package var name: String
        /// The folder every vantage point shares; nil for a private one in `stateFolder`.
        package var proposalsFolder: String?
        /// How old a proposal's list timestamp may be for this vantage point to co-sign it (a
        /// back-dated or stale proposal is not signed; it blocks nothing, as no proposal holds
        /// a version). Also how far short of `expires` its expiry may fall.
        package var proposalTimeout = PublicationDuration(seconds: 3_600)

    package init(name: String, proposalsFolder: String? = nil, proposalTimeout: PublicationDuration = PublicationDuration(seconds: 3_600)) {
        self.name = name
        self.proposalsFolder = proposalsFolder
        self.proposalTimeout = proposalTimeout
    }
    }

    package var partners: [Partner]
    package var signingKeys: [SigningKey]
    /// Public keys (files or Base64) of the other vantage points' signing keys.
    package var otherPublisherKeys: [String] = []
    /// Public keys (files or Base64) of people who may approve staged changes.
    package var approverKeys: [String] = []
    package var threshold = 1
    /// A key document file (as `pinstore keys` writes it) copied into the output folder; when
    /// given, its newest document's keys and threshold are the ones clients trust.
    package var keyDocuments: String?
    package var signingCommandTimeout = PublicationDuration(seconds: 30)
    /// argv of the command run after each publication, the output folder appended; nil for none.
    package var afterPublish: [String]?
    package var afterPublishTimeout = PublicationDuration(seconds: 300)
    package var expires = PublicationDuration(seconds: 7 * 86_400)
    package var resignInterval = PublicationDuration(seconds: 86_400)
    package var probeInterval = PublicationDuration(seconds: 600)
    package var minimumSightings = 3
    package var minimumSpan = PublicationDuration(seconds: 1_200)
    package var gracePeriod = PublicationDuration(seconds: 14 * 86_400)
    package var minimumRemainingValidity = PublicationDuration(seconds: 86_400)
    package var announcementLifetime = PublicationDuration(seconds: 90 * 86_400)
    /// nil: on where the threshold is 2 or more.
    package var publishOnAgreement: Bool?
    /// `ADDRESS:PORT` of the report endpoint, nil for none.
    package var reportEndpoint: String?
    package var certificateTransparencySection: String?
    /// A file holding the `revocations` section every published list carries.
    package var revocations: String?
    /// A file holding the `crl` section (per-host CRL modes) every published list carries.
    package var crl: String?
    package var outputFolder: String
    package var stateFolder: String
    package var listFileName = "list.json"
    package var vantagePoint: VantagePoint?
    /// Where relative paths resolve: the folder of the file.
    package var baseDirectory: URL

    /// Reads and checks the publication file at `url`.
    ///
    /// - Throws: ``PublisherError`` with ``PublisherError/Code/unknownKey``,
    ///   ``PublisherError/Code/inlineKeyMaterial`` or ``PublisherError/Code/invalidPublicationFile``.
    public init(contentsOf url: URL) throws(PublisherError) {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw PublisherError(.invalidPublicationFile, "The publication file \(url.path) cannot be read: \(error.localizedDescription)")
        }
        try self.init(json: data, baseDirectory: url.deletingLastPathComponent())
    }

    /// Parses a publication file's JSON; relative paths resolve against `baseDirectory`.
    public init(json: Data, baseDirectory: URL) throws(PublisherError) {
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: json)
        } catch let error as UnknownKeyError {
            let path = StrictKeys.describe(error.path)
            if error.looksLikeKeyMaterial {
                throw PublisherError(.inlineKeyMaterial, "\(path): key material does not belong in the publication file; name a key file (\"file\") or a signing command (\"command\").")
            }
            throw PublisherError(.unknownKey, "\(path) is not a publication file key; check its spelling (keys are case-sensitive).")
        } catch let error as InlineKeyMaterialError {
            throw PublisherError(.inlineKeyMaterial, "\(StrictKeys.describe(error.path)) looks like key material itself; the publication file names key files or signing commands only, so that a copy of it never leaks a key.")
        } catch let error as DecodingError {
            throw PublisherError(.invalidPublicationFile, "The publication file is not valid: \(Self.describe(error))")
        } catch {
            throw PublisherError(.invalidPublicationFile, "The publication file is not valid JSON.")
        }
        self = wire.file
        self.baseDirectory = baseDirectory
        try check()
    }

    /// The rules no single key can express.
    private func check() throws(PublisherError) {
        var ids = Set<String>()
        for (index, partner) in partners.enumerated() {
            let at = "partners[\(index)]"
            guard !partner.id.isEmpty, ids.insert(partner.id).inserted else {
                throw PublisherError(.invalidPublicationFile, "\(at).id \(String(reflecting: partner.id)) is empty or used twice; each partner needs its own id.")
            }
            guard !partner.host.isEmpty, !partner.host.contains(" ") else {
                throw PublisherError(.invalidPublicationFile, "\(at).host \(String(reflecting: partner.host)) is not a host name.")
            }
            guard (1...65_535).contains(partner.port) else {
                throw PublisherError(.invalidPublicationFile, "\(at).port \(partner.port) is not a TCP port (1-65535).")
            }
            if partner.requireCertificateTransparency, certificateTransparencySection == nil {
                throw PublisherError(.invalidPublicationFile, "\(at).requireCertificateTransparency needs \"certificateTransparencySection\" (the log list the CT check uses).")
            }
        }
        guard !signingKeys.isEmpty else {
            throw PublisherError(.invalidPublicationFile, "\"signingKeys\" is empty; the publisher needs at least one key file or signing command.")
        }
        for (index, key) in signingKeys.enumerated() {
            let at = "signingKeys[\(index)]"
            switch (key.file, key.command) {
            case (_?, nil):
                break
            case (nil, let command?):
                guard !command.isEmpty, !command[0].isEmpty else {
                    throw PublisherError(.invalidPublicationFile, "\(at).command is empty; give the signing program and its arguments.")
                }
                guard key.publicKey != nil else {
                    throw PublisherError(.invalidPublicationFile, "\(at).publicKey is missing; a signing command's output is checked against its public key.")
                }
            default:
                throw PublisherError(.invalidPublicationFile, "\(at) needs exactly one of \"file\" and \"command\".")
            }
        }
        if let afterPublish, afterPublish.first?.isEmpty ?? true {
            throw PublisherError(.invalidPublicationFile, "\"afterPublish\" is empty; give the program and its arguments (the output folder is appended), or leave the key out.")
        }
        guard afterPublishTimeout.seconds > 0 else {
            throw PublisherError(.invalidPublicationFile, "\"afterPublishTimeout\" must be more than 0 seconds.")
        }
        guard threshold >= 1 else {
            throw PublisherError(.invalidPublicationFile, "\"threshold\" \(threshold) must be at least 1.")
        }
        guard minimumSightings >= 1 else {
            throw PublisherError(.invalidPublicationFile, "\"minimumSightings\" \(minimumSightings) must be at least 1.")
        }
        guard expires.seconds >= 60 else {
            throw PublisherError(.invalidPublicationFile, "\"expires\" \(expires) is too short for clients to fetch the list; give at least a minute.")
        }
        guard resignInterval.seconds > 0, resignInterval.seconds < expires.seconds else {
            throw PublisherError(.invalidPublicationFile, "\"resignInterval\" \(resignInterval) must be above 0 and below \"expires\" \(expires): the list is re-signed before clients would refuse it.")
        }
        guard probeInterval.seconds > 0 else {
            throw PublisherError(.invalidPublicationFile, "\"probeInterval\" must be above 0.")
        }
        guard !listFileName.isEmpty, !listFileName.contains("/"), !listFileName.hasPrefix(".") else {
            throw PublisherError(.invalidPublicationFile, "\"listFileName\" \(String(reflecting: listFileName)) must be a plain file name.")
        }
        if let reportEndpoint, Self.endpointAddress(reportEndpoint) == nil {
            throw PublisherError(.invalidPublicationFile, "\"reportEndpoint\" \(String(reflecting: reportEndpoint)) is not ADDRESS:PORT (an IPv4 address and a port from 1 to 65535, e.g. \"127.0.0.1:8470\").")
        }
        if let vantagePoint {
            guard !vantagePoint.name.isEmpty, vantagePoint.name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw PublisherError(.invalidPublicationFile, "vantagePoint.name \(String(reflecting: vantagePoint.name)) must be letters, digits, - and _.")
            }
        }
    }

    /// The IPv4 address and port of an `ADDRESS:PORT` endpoint, nil when it is not one.
    package static func endpointAddress(_ text: String) -> (host: String, port: Int)? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let port = Int(parts[1]), (1...65_535).contains(port) else { return nil }
        let octets = parts[0].split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ $0.count <= 3 && UInt8($0) != nil }) else { return nil }
        return (String(parts[0]), port)
    }

    /// `path` resolved against the file's folder.
    package func resolve(_ path: String) -> URL {
        path.hasPrefix("/") ? URL(fileURLWithPath: path) : baseDirectory.appendingPathComponent(path)
    }

    /// This publisher's name among the vantage points.
    package var publisherName: String { vantagePoint?.name ?? "publisher" }

    /// The proposals folder: the shared one, or a private one in the state folder.
    package var proposalsFolderURL: URL {
        vantagePoint?.proposalsFolder.map(resolve) ?? resolve(stateFolder).appendingPathComponent("proposals")
    }

    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            let owner = StrictKeys.describe(context.codingPath)
            return "\(owner) has no \"\(key.stringValue)\", which is required."
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(StrictKeys.describe(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

// MARK: - Decoding (strict)

extension PublicationFile {
    /// The top level, decoded key by key so that unknown keys are refused.
    private struct Wire: Decodable {
        let file: PublicationFile

        init(from decoder: any Decoder) throws {
            let known: Set<String> = ["partners", "signingKeys", "otherPublisherKeys", "approverKeys", "threshold", "keyDocuments",
                                      "signingCommandTimeout", "afterPublish", "afterPublishTimeout", "expires", "resignInterval", "probeInterval", "minimumSightings",
                                      "minimumSpan", "gracePeriod", "minimumRemainingValidity", "announcementLifetime", "publishOnAgreement", "reportEndpoint",
                                      "certificateTransparencySection", "revocations", "crl", "outputFolder", "stateFolder", "listFileName", "vantagePoint"]
            try StrictKeys.check(decoder, known: known)
            let c = try decoder.container(keyedBy: AnyCodingKey.self)
            func key(_ name: String) -> AnyCodingKey { AnyCodingKey(stringValue: name) }
            var file = PublicationFile(
                partners: try c.decodeIfPresent([Partner].self, forKey: key("partners")) ?? [],
                signingKeys: try c.decode([SigningKey].self, forKey: key("signingKeys")),
                outputFolder: try c.decode(String.self, forKey: key("outputFolder")),
                stateFolder: try c.decode(String.self, forKey: key("stateFolder")),
                baseDirectory: URL(fileURLWithPath: "/"))
            file.otherPublisherKeys = try c.decodeIfPresent([String].self, forKey: key("otherPublisherKeys")) ?? []
            file.approverKeys = try c.decodeIfPresent([String].self, forKey: key("approverKeys")) ?? []
            file.threshold = try c.decodeIfPresent(Int.self, forKey: key("threshold")) ?? file.threshold
            file.keyDocuments = try c.decodeIfPresent(String.self, forKey: key("keyDocuments"))
            func duration(_ name: String, _ fallback: PublicationDuration) throws -> PublicationDuration {
                try c.decodeIfPresent(PublicationDuration.self, forKey: key(name)) ?? fallback
            }
            file.signingCommandTimeout = try duration("signingCommandTimeout", file.signingCommandTimeout)
            file.afterPublish = try c.decodeIfPresent([String].self, forKey: key("afterPublish"))
            file.afterPublishTimeout = try duration("afterPublishTimeout", file.afterPublishTimeout)
            file.expires = try duration("expires", file.expires)
            file.resignInterval = try duration("resignInterval", file.resignInterval)
            file.probeInterval = try duration("probeInterval", file.probeInterval)
            file.minimumSightings = try c.decodeIfPresent(Int.self, forKey: key("minimumSightings")) ?? file.minimumSightings
            file.minimumSpan = try duration("minimumSpan", file.minimumSpan)
            file.gracePeriod = try duration("gracePeriod", file.gracePeriod)
            file.minimumRemainingValidity = try duration("minimumRemainingValidity", file.minimumRemainingValidity)
            file.announcementLifetime = try duration("announcementLifetime", file.announcementLifetime)
            file.publishOnAgreement = try c.decodeIfPresent(Bool.self, forKey: key("publishOnAgreement"))
            file.reportEndpoint = try c.decodeIfPresent(String.self, forKey: key("reportEndpoint"))
            file.certificateTransparencySection = try c.decodeIfPresent(String.self, forKey: key("certificateTransparencySection"))
            file.revocations = try c.decodeIfPresent(String.self, forKey: key("revocations"))
            file.crl = try c.decodeIfPresent(String.self, forKey: key("crl"))
            file.listFileName = try c.decodeIfPresent(String.self, forKey: key("listFileName")) ?? file.listFileName
            file.vantagePoint = try c.decodeIfPresent(VantagePoint.self, forKey: key("vantagePoint"))
            self.file = file
        }
    }

    private init(partners: [Partner], signingKeys: [SigningKey], outputFolder: String, stateFolder: String, baseDirectory: URL) {
        self.partners = partners
        self.signingKeys = signingKeys
        self.outputFolder = outputFolder
        self.stateFolder = stateFolder
        self.baseDirectory = baseDirectory
    }
}

extension PublicationFile.Partner: Decodable {
    package init(from decoder: any Decoder) throws {
        try StrictKeys.check(decoder, known: ["id", "host", "port", "sni", "pin", "anchors", "requireCertificateTransparency", "allowedCAs"])
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        func key(_ name: String) -> AnyCodingKey { AnyCodingKey(stringValue: name) }
        let host = try c.decode(String.self, forKey: key("host"))
        self.init(id: try c.decodeIfPresent(String.self, forKey: key("id")) ?? host, host: host)
        port = try c.decodeIfPresent(Int.self, forKey: key("port")) ?? port
        sni = try c.decodeIfPresent(String.self, forKey: key("sni"))
        if let text = try c.decodeIfPresent(String.self, forKey: key("pin")) {
            guard let kind = PublicationFile.PinKind(rawValue: text) else {
                throw DecodingError.dataCorruptedError(forKey: key("pin"), in: c, debugDescription: "\(String(reflecting: text)) is not one of \"leafCertificate\", \"leafKey\", \"issuerKey\"")
            }
            pin = kind
        }
        anchors = try c.decodeIfPresent(String.self, forKey: key("anchors")) ?? anchors
        requireCertificateTransparency = try c.decodeIfPresent(Bool.self, forKey: key("requireCertificateTransparency")) ?? false
        allowedCAs = try c.decodeIfPresent([String].self, forKey: key("allowedCAs")) ?? []
    }
}

extension PublicationFile.SigningKey: Decodable {
    package init(from decoder: any Decoder) throws {
        try StrictKeys.check(decoder, known: ["file", "command", "publicKey"])
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        func key(_ name: String) -> AnyCodingKey { AnyCodingKey(stringValue: name) }
        file = try c.decodeIfPresent(String.self, forKey: key("file"))
        command = try c.decodeIfPresent([String].self, forKey: key("command"))
        publicKey = try c.decodeIfPresent(String.self, forKey: key("publicKey"))
        if let file, StrictKeys.looksLikeKeyMaterial(file) {
            throw InlineKeyMaterialError(path: decoder.codingPath + [key("file")])
        }
        if let command, let index = command.firstIndex(where: StrictKeys.looksLikeKeyMaterial) {
            throw InlineKeyMaterialError(path: decoder.codingPath + [key("command"), AnyCodingKey(intValue: index)])
        }
        if let publicKey, publicKey.contains("PRIVATE KEY") {
            throw InlineKeyMaterialError(path: decoder.codingPath + [key("publicKey")])
        }
    }
}

extension PublicationFile.VantagePoint: Decodable {
    package init(from decoder: any Decoder) throws {
        try StrictKeys.check(decoder, known: ["name", "proposalsFolder", "proposalTimeout"])
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        func key(_ name: String) -> AnyCodingKey { AnyCodingKey(stringValue: name) }
        self.init(name: try c.decode(String.self, forKey: key("name")),
                  proposalsFolder: try c.decodeIfPresent(String.self, forKey: key("proposalsFolder")))
        proposalTimeout = try c.decodeIfPresent(PublicationDuration.self, forKey: key("proposalTimeout")) ?? proposalTimeout
    }
}

import Foundation

/// A pin-failure report as PinStore sends it to ``PinStore/Configuration/reportURI``: the
/// fields of RFC 7469 section 3 and of TrustKit's reports, so collectors built for either read
/// it, plus PinStore's own (`pinstore-reason`, `pinstore-version`).
///
/// ```json
/// {"date-time":"2026-11-22T10:00:00Z","hostname":"api.example.com","port":443,
///  "noted-hostname":"api.example.com","include-subdomains":false,"enforce-pinning":true,
///  "validated-certificate-chain":["-----BEGIN CERTIFICATE-----\n..."],
///  "served-certificate-chain":["-----BEGIN CERTIFICATE-----\n..."],
///  "known-pins":["cert-sha256=\"r/mIkG3e...=\"","pin-sha256=\"9Bjf0Eyz...=\""],
///  "validation-result":1,"effective-expiration-date":"2027-01-01T00:00:00Z",
///  "pinstore-reason":"pin_mismatch","pinstore-version":"0.1.0"}
/// ```
///
/// Nothing else is ever in a report: no request data, header, cookie, path or query.
/// Collectors decode one with ``init(jsonData:)``.
public struct PinFailureReport: Sendable, Hashable, Codable {
    /// When the failure happened (UTC, whole seconds; RFC 3339 on the wire).
    public var dateTime: Date
    /// The host name (or IP address) the client connected to.
    public var hostname: String
    /// The TCP port the client connected to; absent when the adapter did not know it.
    public var port: Int?
    /// The pinned name whose pins applied: the host itself, a `*.` list entry, or a policy's
    /// domain. The host itself when no pin applied (`no_pins_for_host`).
    public var notedHostname: String
    /// Whether the pins of ``notedHostname`` cover its subdomains (a policy with
    /// `includesSubdomains`).
    public var includeSubdomains: Bool
    /// Whether the connection was refused (true) or let through in report-only mode (false).
    public var enforcePinning: Bool
    /// The chain the normal trust evaluation validated, leaf to anchor, as PEM. The adapters
    /// that see only the leaf (AsyncHTTPClient) send the leaf alone.
    public var validatedCertificateChain: [String]
    /// The certificates the server presented, leaf first, as PEM (the leaf alone on
    /// AsyncHTTPClient).
    public var servedCertificateChain: [String]
    /// The pins that applied to the host: key pins as RFC 7469 writes them
    /// (`pin-sha256="<Base64 of SHA-256 of the SPKI>"`), certificate pins, which RFC 7469 has no
    /// name for, as `cert-sha256="<Base64 of SHA-256 of the certificate>"`.
    public var knownPins: [String]
    /// TrustKit's evaluation result code: always ``ValidationResult/noMatchingPin`` (1), as
    /// only pin failures of validated chains are reported; ``reason`` says which kind.
    public var validationResult: Int
    /// The latest expiration among the pins that applied; absent when none has one.
    public var effectiveExpirationDate: Date?
    /// PinStore's reason, as in the `reason` dimension of `pinstore_decisions_total`:
    /// `pin_mismatch`, `no_pins_for_host`, `host_not_expected`, `issuer_pins_need_chain`, `denied_key`,
    /// `certificate_transparency_not_met`, `revoked_by_list`, `revocations_need_chain`, `crl_check_failed`.
    public var reason: String
    /// The PinStore version that sent the report.
    public var libraryVersion: String

    /// TrustKit's `validation-result` codes that PinStore uses.
    public enum ValidationResult {
        /// TrustKit's `TSKTrustEvaluationFailedNoMatchingPin`: the chain is valid, the pins refuse it.
        public static let noMatchingPin = 1
    }

    enum CodingKeys: String, CodingKey {
        case dateTime = "date-time"
        case hostname
        case port
        case notedHostname = "noted-hostname"
        case includeSubdomains = "include-subdomains"
        case enforcePinning = "enforce-pinning"
        case validatedCertificateChain = "validated-certificate-chain"
        case servedCertificateChain = "served-certificate-chain"
        case knownPins = "known-pins"
        case validationResult = "validation-result"
        case effectiveExpirationDate = "effective-expiration-date"
        case reason = "pinstore-reason"
        case libraryVersion = "pinstore-version"
    }

    /// Creates a report; dates are cut to whole seconds, as they travel.
    public init(dateTime: Date, hostname: String, port: Int?, notedHostname: String, includeSubdomains: Bool,
                enforcePinning: Bool, validatedCertificateChain: [String], servedCertificateChain: [String],
                knownPins: [String], validationResult: Int = ValidationResult.noMatchingPin,
                effectiveExpirationDate: Date?, reason: String, libraryVersion: String = PinStoreVersion.current) {
        self.dateTime = Self.wholeSeconds(dateTime)
        self.hostname = hostname
        self.port = port
        self.notedHostname = notedHostname
        self.includeSubdomains = includeSubdomains
        self.enforcePinning = enforcePinning
        self.validatedCertificateChain = validatedCertificateChain
        self.servedCertificateChain = servedCertificateChain
        self.knownPins = knownPins
        self.validationResult = validationResult
        self.effectiveExpirationDate = effectiveExpirationDate.map(Self.wholeSeconds)
        self.reason = reason
        self.libraryVersion = libraryVersion
    }

    /// Decodes a report as a collector receives it.
    ///
    /// - Throws: `DecodingError` when `data` is not a report (a missing field, a date that is
    ///   not RFC 3339 in whole seconds).
    public init(jsonData data: Data) throws {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        self = try decoder.decode(PinFailureReport.self, from: data)
    }

    /// The report as sent: compact JSON with sorted keys (the same report is always the same bytes).
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    private static func wholeSeconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
    }
}

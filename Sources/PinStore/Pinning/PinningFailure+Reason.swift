extension PinningFailure {
    /// The kind of failure, and what it carries.
    ///
    /// Not an enum on purpose: new rules (revocation, new publisher checks) add reasons in
    /// minor releases, and a new case of a public enum would stop every exhaustive `switch` in
    /// the apps that use PinStore from compiling. Match on ``code`` with a `default`, or compare:
    ///
    /// ```swift
    /// switch failure.reason.code {
    /// case .pinMismatch: alertSecurityTeam(failure)
    /// case .noPinsForHost: scheduleUpdate()
    /// default: break                        // reasons added later land here
    /// }
    /// if failure.reason == .pinMismatch { alertSecurityTeam(failure) }
    /// if let error = failure.reason.chainValidationError { logger.debug("\(error)") }
    /// ```
    ///
    /// `case .pinMismatch:` and `case .deniedKey:` also match a reason directly (through `~=`);
    /// what a reason carries is read through its accessors (``chainValidationError``,
    /// ``updateResult``, ``deniedKeyDepth``, ``transportSecurityViolation``,
    /// ``certificateTransparencyViolation``, ``listRevocation``), not by binding it in a pattern.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        /// Which kind of reason this is, without what it carries. Compare against the static
        /// members; a minor release may add members.
        public struct Code: Sendable, Hashable, CustomStringConvertible {
            /// A stable name: the reason's static member, e.g. `"pinMismatch"`.
            public let name: String
            init(_ name: String) { self.name = name }
            /// ``name``.
            public var description: String { name }

            /// ``Reason/chainNotTrusted(_:)``.
            public static let chainNotTrusted = Code("chainNotTrusted")
            /// ``Reason/pinMismatch``.
            public static let pinMismatch = Code("pinMismatch")
            /// ``Reason/noPinsForHost(updateResult:)``.
            public static let noPinsForHost = Code("noPinsForHost")
            /// ``Reason/hostNotExpected``.
            public static let hostNotExpected = Code("hostNotExpected")
            /// ``Reason/issuerPinsNeedChain``.
            public static let issuerPinsNeedChain = Code("issuerPinsNeedChain")
            /// ``Reason/deniedKey(depth:)``.
            public static let deniedKey = Code("deniedKey")
            /// ``Reason/transportSecurityNotMet(_:)``.
            public static let transportSecurityNotMet = Code("transportSecurityNotMet")
            /// ``Reason/certificateTransparencyNotMet(_:)``.
            public static let certificateTransparencyNotMet = Code("certificateTransparencyNotMet")
            /// ``Reason/revokedByList(_:)``.
            public static let revokedByList = Code("revokedByList")
            /// ``Reason/revocationsNeedChain``.
            public static let revocationsNeedChain = Code("revocationsNeedChain")
            /// ``Reason/crlCheckFailed(_:)``.
            public static let crlCheckFailed = Code("crlCheckFailed")

            /// Whether an optional reason is there and of this kind: lets
            /// `guard case .chainNotTrusted = decision.failure?.reason` compile as it did.
            public static func ~= (code: Code, reason: Reason?) -> Bool { reason?.code == code }
        }

        /// The reasons as this version knows them. Internal, so that our own code (texts,
        /// metrics, reports, the update rule) must answer every reason when one is added here.
        enum Backing: Sendable, Hashable {
            case chainNotTrusted(ChainValidationError)
            case pinMismatch
            case noPinsForHost(updateResult: PinStore.UpdateResult?)
            case hostNotExpected
            case issuerPinsNeedChain
            case deniedKey(depth: Int)
            case transportSecurityNotMet(TransportSecurityViolation)
            case certificateTransparencyNotMet(CertificateTransparencyViolation)
            case revokedByList(ListRevocationMatch)
            case revocationsNeedChain
            case crlCheckFailed(CRLCheckFailure)
        }

        let backing: Backing

        private init(_ backing: Backing) { self.backing = backing }

        /// The normal trust evaluation refused the chain (anchor, dates, host name, ...).
        /// Pinning never overrides it.
        public static func chainNotTrusted(_ error: ChainValidationError) -> Reason { Reason(.chainNotTrusted(error)) }
        /// The host has valid pins, but none matches the validated chain.
        public static let pinMismatch = Reason(.pinMismatch)
        /// The store holds no valid pin for the host. `updateResult` is the outcome of the
        /// update tried before giving up, nil when none was tried.
        public static func noPinsForHost(updateResult: PinStore.UpdateResult?) -> Reason { Reason(.noPinsForHost(updateResult: updateResult)) }
        /// The host is not among ``PinStore/Configuration/expectedCommonNames``.
        public static let hostNotExpected = Reason(.hostNotExpected)
        /// The host's pins include issuer pins (`depth` > 0) and no leaf pin matches, and the
        /// adapter sees only the server's leaf (AsyncHTTPClient), so it cannot prove an issuer pin.
        public static let issuerPinsNeedChain = Reason(.issuerPinsNeedChain)
        /// A certificate at `depth` of the validated chain has a key among
        /// ``PinStore/Configuration/deniedPublicKeys``. Deny pins win over every pin.
        public static func deniedKey(depth: Int) -> Reason { Reason(.deniedKey(depth: depth)) }
        /// The connection falls short of an ATS transport minimum (TLS version, forward secrecy,
        /// a certificate's signature digest or key size) that no
        /// ``TransportSecurityException`` relaxes for the host. Checked right after the normal
        /// trust evaluation, before any pin.
        public static func transportSecurityNotMet(_ violation: TransportSecurityViolation) -> Reason { Reason(.transportSecurityNotMet(violation)) }
        /// The host asks for Certificate Transparency (``CertificateTransparencyMode``) and the
        /// leaf's embedded SCTs fall short of the profile. Checked after the trust evaluation and
        /// the expected hosts, before any pin.
        public static func certificateTransparencyNotMet(_ violation: CertificateTransparencyViolation) -> Reason {
            Reason(.certificateTransparencyNotMet(violation))
        }
        /// A certificate of the validated chain is revoked by the signed list's `revocations`
        /// section (its key, the certificate itself, or its issuer key and serial number).
        /// Checked right after the trust evaluation, before every other rule; never relaxed, not
        /// even by report-only mode or a domainsConfig exemption.
        public static func revokedByList(_ match: ListRevocationMatch) -> Reason { Reason(.revokedByList(match)) }
        /// The signed list revokes certificates or keys that a leaf alone cannot rule out (a CA
        /// key, say), and the adapter sees only the leaf (AsyncHTTPClient, the single-certificate
        /// `matchPins` forms): refused rather than skipped. The failure's details say which.
        public static let revocationsNeedChain = Reason(.revocationsNeedChain)

        /// The host is under a CRL check (``CRLCheckMode``) and a certificate of the validated
        /// chain is revoked by its CA, or its CRL could not be had (refused under
        /// ``CRLCheckMode/enforceHardFail`` only). Checked after the expected hosts, before CT and pins.
        public static func crlCheckFailed(_ failure: CRLCheckFailure) -> Reason { Reason(.crlCheckFailed(failure)) }

        /// Which kind of reason this is.
        public var code: Code {
            switch backing {
            case .chainNotTrusted: .chainNotTrusted
            case .pinMismatch: .pinMismatch
            case .noPinsForHost: .noPinsForHost
            case .hostNotExpected: .hostNotExpected
            case .issuerPinsNeedChain: .issuerPinsNeedChain
            case .deniedKey: .deniedKey
            case .transportSecurityNotMet: .transportSecurityNotMet
            case .certificateTransparencyNotMet: .certificateTransparencyNotMet
            case .revokedByList: .revokedByList
            case .revocationsNeedChain: .revocationsNeedChain
            case .crlCheckFailed: .crlCheckFailed
            }
        }

        /// For ``chainNotTrusted(_:)``: what the normal trust evaluation refused; nil otherwise.
        public var chainValidationError: ChainValidationError? {
            if case .chainNotTrusted(let error) = backing { return error }
            return nil
        }

        /// For ``noPinsForHost(updateResult:)``: the outcome of the update tried before giving
        /// up; nil when none was tried, and for every other reason.
        public var updateResult: PinStore.UpdateResult? {
            if case .noPinsForHost(let result) = backing { return result }
            return nil
        }

        /// For ``deniedKey(depth:)``: the position in the validated chain of the certificate with
        /// the denied key (0 = leaf); nil otherwise.
        public var deniedKeyDepth: Int? {
            if case .deniedKey(let depth) = backing { return depth }
            return nil
        }

        /// For ``transportSecurityNotMet(_:)``: the minimum that was not met; nil otherwise.
        public var transportSecurityViolation: TransportSecurityViolation? {
            if case .transportSecurityNotMet(let violation) = backing { return violation }
            return nil
        }

        /// For ``certificateTransparencyNotMet(_:)``: what the SCTs lack; nil otherwise.
        public var certificateTransparencyViolation: CertificateTransparencyViolation? {
            if case .certificateTransparencyNotMet(let violation) = backing { return violation }
            return nil
        }

        /// For ``revokedByList(_:)``: the entry that matched and where; nil otherwise.
        public var listRevocation: ListRevocationMatch? {
            if case .revokedByList(let match) = backing { return match }
            return nil
        }

        /// For ``crlCheckFailed(_:)``: the revoked certificate, or why its CRL was unavailable;
        /// nil otherwise.
        public var crlCheckFailure: CRLCheckFailure? {
            if case .crlCheckFailed(let failure) = backing { return failure }
            return nil
        }

        /// The code and what the reason carries, e.g. `deniedKey(depth: 1)`.
        public var description: String {
            switch backing {
            case .chainNotTrusted(let error): "chainNotTrusted(\(error))"
            case .noPinsForHost(let result): "noPinsForHost(updateResult: \(result.map { "\($0)" } ?? "nil"))"
            case .deniedKey(let depth): "deniedKey(depth: \(depth))"
            case .transportSecurityNotMet(let violation): "transportSecurityNotMet(\(violation))"
            case .certificateTransparencyNotMet(let violation): "certificateTransparencyNotMet(\(violation))"
            case .revokedByList(let match): "revokedByList(\(match))"
            case .pinMismatch, .hostNotExpected, .issuerPinsNeedChain, .revocationsNeedChain: code.name
            case .crlCheckFailed(let failure): "crlCheckFailed(\(failure))"
            }
        }

        /// Whether `reason` is of the kind `code`, whatever it carries: lets
        /// `case .noPinsForHost:` match a reason in a `switch` or `if case`, as it did when
        /// `Reason` was an enum.
        public static func ~= (code: Code, reason: Reason) -> Bool { reason.code == code }
    }
}

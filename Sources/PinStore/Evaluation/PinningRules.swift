import Foundation

/// The pin check, in its order. The order is the security argument, and it is written here
/// only; every adapter reaches it through ``PinningEvaluator`` or the leaf view
/// (``PinStore/leafDecision(leaf:peerAddress:)``):
///
/// 0. trust, before any rule: the chain exists only once the normal trust evaluation (a chain
///    to the anchors, validity dates, the host name) accepted it and it met ATS's certificate
///    minimums (``ChainValidator`` and ``CertificateStrengthPolicy`` in ``PinningEvaluator``,
///    `SecTrust` on Apple platforms, swift-nio-ssl's default verification for AsyncHTTPClient);
/// 0b. ``RevocationRule``: a certificate the signed list revokes (key, certificate, or issuer key
///    and serial), anywhere in the chain, refuses; a leaf alone that cannot rule an entry out is
///    refused too (``PinningFailure/Reason/revocationsNeedChain``);
/// 1. ``ExpectedHostRule``: a host outside `expectedCommonNames` is refused;
/// 1a. ``CRLRevocationRule``: after the list's revocations, before CT: a host under a CRL mode
///    needs its chain absent from its CAs' current CRLs (a revoked certificate refused when
///    enforced; an unavailable CRL refused under hard fail only, else reported);
/// 1b. ``CertificateTransparencyRule``: a host that asks for CT needs compliant embedded SCTs
///    (refused when enforced; reported, with the later rules still deciding, when report-only);
/// 2. ``DeniedKeyRule``: a denied key anywhere in the chain refuses;
/// 3. ``PinSetRule``: allowed when a pin that applies to the host matches;
///
/// then the relaxations of a failure of step 3, in order: ``DomainsConfigRelaxation`` (a host
/// without pins the signed list exempts is allowed) and ``ReportOnlyRelaxation`` (a failure
/// nobody enforces is reported, not refused). Steps 0 to 2 are never relaxed: a revoked chain is
/// refused in report-only mode too, and for a host the domainsConfig exempts.
struct PinningRules: Sendable {
    let rules: [any PinningRule]
    let relaxations: [any PinFailureRelaxation]
    /// ``rules`` again, in their order, as ``decide(_:relaxing:)`` runs them: a rule loaded out
    /// of an array is retained and released around its check (the compiler cannot prove that a
    /// check leaves the array alone), about 40 instructions a rule and a tenth of a `matchPins`;
    /// a `let` of a box reached through `Unmanaged` is read in place. ``heldRules`` keeps the
    /// boxes alive as long as this value.
    private let unretainedRules: [Unmanaged<HeldRule>]
    private let heldRules: [HeldRule]

    private final class HeldRule: Sendable {
        let rule: any PinningRule

        init(_ rule: any PinningRule) {
            self.rule = rule
        }
    }

    init(enforcement: PinStore.Configuration.Enforcement, expectedNames: Set<String>?, staticPins: StaticPins,
         certificateTransparency: CertificateTransparencyChecker = CertificateTransparencyChecker(defaultMode: .off),
         crl: CRLChecker = CRLChecker(defaultMode: .off)) {
        self.init(rules: [
            RevocationRule(),
            ExpectedHostRule(expected: expectedNames),
            CRLRevocationRule(checker: crl),
            CertificateTransparencyRule(checker: certificateTransparency),
            DeniedKeyRule(denied: staticPins.denied),
            PinSetRule(staticPins: staticPins, listEnforced: enforcement == .enforced),
        ], relaxations: [
            DomainsConfigRelaxation(),
            ReportOnlyRelaxation(storeWide: enforcement == .reportOnly),
        ])
    }

    /// The lists as given. The store uses the initializer above; this one lets a test run
    /// the decision with a rule of its own.
    init(rules: [any PinningRule], relaxations: [any PinFailureRelaxation]) {
        self.rules = rules
        self.relaxations = relaxations
        heldRules = rules.map(HeldRule.init)
        unretainedRules = heldRules.map(Unmanaged.passUnretained)
    }

    /// Every exact host name a rule or a relaxation singles out under `tables` (see
    /// ``PinningRule/singledOutHosts(_:into:)``): what the leaf view decides one by one.
    func singledOutHosts(_ tables: PinningTables) -> Set<String> {
        var names: Set<String> = []
        for rule in rules { rule.singledOutHosts(tables, into: &names) }
        for relaxation in relaxations { relaxation.singledOutHosts(tables, into: &names) }
        return names
    }

    /// The decision for one connection (not reported). `relaxing` false answers the rules alone
    /// (every ``PinStore/matchPins(commonName:certificateChain:)`` form asks whether it is pinned).
    func decide(_ connection: PinningContext, relaxing: Bool = true) -> PinningDecision {
        // A report-only failure of an earlier rule: reported if the later rules allow.
        var reported: PinningFailure?
        for index in unretainedRules.indices {
            switch unretainedRules[index]._withUnsafeGuaranteedRef({ $0.rule.check(connection) }) {
            case .meetsRule:
                continue
            case .reportsOnly(let reason):
                reported = reported ?? connection.failure(reason)
            case .pinned:
                if let reported, relaxing {
                    return .reportOnly(reported, validatedChain: connection.evidence.certificates)
                }
                return .allow(validatedChain: connection.evidence.certificates)
            case .failsRule(let reason, let enforcing, let relaxable):
                let failure = connection.failure(reason)
                if relaxable, relaxing {
                    for relaxation in relaxations {
                        if let relaxed = relaxation.relax(failure, enforcing: enforcing, connection) {
                            guard let reported else { return relaxed }
                            // The earlier report-only failure is never lost: an exempt host
                            // (domainsConfig) reports it, a reported pin failure carries it.
                            switch relaxed {
                            case .allow(let chain):
                                return .reportOnly(reported, validatedChain: chain)
                            case .reportOnly(let pinFailure, let chain):
                                let also = "Also: \(reported.summary)"
                                return .reportOnly(PinningFailure(host: pinFailure.host, reason: pinFailure.reason,
                                                                  details: pinFailure.details.map { "\($0)\n\(also)" } ?? also),
                                                   validatedChain: chain)
                            case .deny:
                                return relaxed
                            }
                        }
                    }
                }
                return .deny(failure)
            }
        }
        // The pin set always answers; a rule list without it must not allow by default.
        return .deny(connection.failure(.noPinsForHost(updateResult: nil)))
    }
}

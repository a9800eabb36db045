import Foundation
import Logging
import NIOCore
import NIOSSL
import PinStore

/// Pinning for SwiftNIO TLS clients: a ready `NIOSSLCustomVerificationCallbackWithMetadata`
/// that performs the normal trust evaluation and the pin check (`PinningEvaluator`), and a
/// maker of `NIOSSLClientHandler`s that use it.
///
/// ```swift
/// let verifier = PinningTLSVerifier(store: store)
/// let context = try NIOSSLContext(configuration: .makeClientConfiguration())
/// let bootstrap = ClientBootstrap(group: NIOSingletons.posixEventLoopGroup)
///     .channelInitializer { channel in
///         channel.eventLoop.makeCompletedFuture {
///             let tls = try verifier.makeClientHandler(context: context, serverHostname: "api.example.com")
///             try channel.pipeline.syncOperations.addHandler(tls)
///             // ... HTTP handlers; send the request after `TLSUserEvent.handshakeCompleted`
///         }
///     }
/// ```
///
/// The custom callback replaces swift-nio-ssl's own chain verification, so this verifier does
/// all of it (anchors, dates, host name) before pinning: it never relaxes what the default
/// verification would refuse. A refused chain fails the handshake before any application byte is
/// written. Apple ATS's transport minimums hold too (TLS 1.2, forward secrecy, SHA-256 signatures,
/// RSA-2048/EC-256 keys, relaxed per domain by `PinStore/TransportSecurityException`).
public struct PinningTLSVerifier: Sendable {
    /// The decision this verifier applies.
    public let evaluator: PinningEvaluator
    let logger: Logger
    /// The TLS contexts with ATS's handshake minimums, per caller context and host requirements.
    let transportContexts = TransportSecurityContexts()

    /// A verifier applying `evaluator`.
    public init(evaluator: PinningEvaluator, logger: Logger? = nil) {
        self.evaluator = evaluator
        self.logger = logger ?? Logger(label: "PinStoreNIO", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    /// A verifier pinning through `store` after normal evaluation against `trustRoots`.
    ///
    /// - Parameters:
    ///   - store: The pins.
    ///   - trustRoots: The anchors of the normal trust evaluation (the system store unless set).
    ///   - updateOnEmpty: Whether a host without pins triggers one forced update of the store
    ///     before deciding; the update runs off the event loop while the handshake waits.
    ///   - updateOnMismatch: Whether a valid chain that matches no pin triggers one forced
    ///     update before deciding (a partner's unannounced rotation). Downloads on behalf of
    ///     refusals happen at most once a minute per store.
    ///   - logger: Where refusals are logged (at debug); none by default.
    public init(store: PinStore, trustRoots: TrustRoots = .system, updateOnEmpty: Bool = true,
                updateOnMismatch: Bool = true, logger: Logger? = nil) {
        self.init(evaluator: PinningEvaluator(store: store, trustRoots: trustRoots,
                                              updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch),
                  logger: logger)
    }

    /// The verification callback for a connection to `serverHostname`.
    ///
    /// It enforces ATS's certificate minimums (through the evaluator) but cannot touch the
    /// handshake's: give the handler a context made from
    /// ``clientConfiguration(for:base:)`` so the TLS version and cipher-suite minimums hold too.
    ///
    /// - Important: swift-nio-ssl ignores a callback's refusal when the context's
    ///   `certificateVerification` is `.none` (and `.optionalVerification` lets a server skip
    ///   it). Prefer ``makeClientHandler(context:serverHostname:port:onDecision:)``, which refuses such
    ///   contexts; when handing this callback to another library, make sure it uses
    ///   `.fullVerification` (or `.noHostnameVerification`: the callback checks the host itself).
    ///
    /// - Parameters:
    ///   - serverHostname: The host name or IP address the client connects to; the chain must be
    ///     valid for it and pinned under it.
    ///   - port: The TCP port the client connects to, for pin-failure reports.
    ///   - onDecision: Called once with the decision (on the event loop, or on a concurrency
    ///     thread after an update), before the promise completes. Use it to report the reason of
    ///     a refused handshake: swift-nio-ssl itself only says the handshake failed.
    public func verificationCallback(serverHostname: String, port: Int? = nil,
                                     onDecision: (@Sendable (PinningDecision) -> Void)? = nil) -> NIOSSLCustomVerificationCallbackWithMetadata {
        verificationCallback(serverHostname: serverHostname, port: port, onAdmission: Self.ignoringEvidence(onDecision))
    }

    /// ``verificationCallback(serverHostname:port:onDecision:)`` for an adapter that keeps the
    /// connection: `onAdmission` also gets what the connection was admitted with (the chain
    /// the trust evaluation validated and the host it was validated for; nil when trust refused
    /// it), to re-check it with after a list change (``AdmissionGate``).
    package func verificationCallback(serverHostname: String, port: Int?,
                                      onAdmission: (@Sendable (PinningDecision, AdmissionGate.Evidence?) -> Void)?) -> NIOSSLCustomVerificationCallbackWithMetadata {
        let evaluator = self.evaluator
        let logger = self.logger
        return { certificates, promise in
            // A certificate swift-nio-ssl cannot serialise becomes empty bytes, which the chain
            // validator reports as malformed at its depth.
            let presented = certificates.map { certificate in
                (try? certificate.toDERBytes()).map { Data($0) } ?? Data()
            }
            // Chain validation and pin lookup are a few signature checks and hashes: cheap enough
            // for the event loop. Only the optional update has to leave it.
            let (step, proof) = evaluator.beginKeepingProof(host: serverHostname, port: port, presentedChain: presented, at: Date())
            let evidence = proof.map { AdmissionGate.Evidence.chain($0.chain, host: $0.host) }
            switch step {
            case .decided(let decision):
                Self.complete(promise, with: decision, evidence: evidence, onAdmission: onAdmission, logger: logger)
            case .updateFirst(let pending):
                Task {
                    Self.complete(promise, with: await pending.decideAfterUpdate(), evidence: evidence, onAdmission: onAdmission, logger: logger)
                }
            }
        }
    }

    /// A client TLS handler for `serverHostname` verified by this verifier.
    ///
    /// The SNI name is `serverHostname`, except for an IP address (TLS forbids those in SNI); the
    /// chain is still checked against the address. `port` (the TCP port connected to) goes into
    /// pin-failure reports.
    ///
    /// The handshake meets ATS's minimums for the host (TLS 1.2 or later, forward-secret
    /// suites only, unless a `PinStore/TransportSecurityException` relaxes them): when
    /// `context` allows less, the handler uses a context derived from it with the minimum
    /// version raised and only its forward-secret suites (made once per context and host
    /// requirements). A handshake the server then refuses fails with swift-nio-ssl's error;
    /// ``transportSecurityFailure(for:serverHostname:)`` names the requirement it most likely failed.
    ///
    /// - Throws: ``PinningTLSSetupError`` when `context`'s configuration has
    ///   `certificateVerification` `.none` (or `.optionalVerification`): with it swift-nio-ssl
    ///   ignores the callback's verdict and pinning would silently do nothing; or when it cannot
    ///   meet the host's transport minimums (a maximum version below them, no forward-secret
    ///   suite). Errors of `NIOSSLClientHandler` itself pass through.
    public func makeClientHandler(context: NIOSSLContext, serverHostname: String, port: Int? = nil,
                                  onDecision: (@Sendable (PinningDecision) -> Void)? = nil) throws -> NIOSSLClientHandler {
        guard let host = try? HostName(serverHostname) else {
            // Not a host name: the pin check refuses it with the reason (no SNI can carry it).
            try Self.checkVerificationEnabled(context.configuration)
            return try NIOSSLClientHandler(context: context, serverHostname: nil,
                                           customVerificationCallbackWithMetadata: verificationCallback(serverHostname: serverHostname, port: port,
                                                                                                        onDecision: onDecision))
        }
        return try makeClientHandler(context: context, host: host, port: port, onAdmission: Self.ignoringEvidence(onDecision))
    }

    /// ``makeClientHandler(context:serverHostname:port:onDecision:)`` for a host name already made
    /// at the adapter's edge, reporting what the connection was admitted with
    /// (``verificationCallback(serverHostname:port:onAdmission:)``).
    package func makeClientHandler(context: NIOSSLContext, host: HostName, port: Int?,
                                   onAdmission: (@Sendable (PinningDecision, AdmissionGate.Evidence?) -> Void)?) throws -> NIOSSLClientHandler {
        try Self.checkVerificationEnabled(context.configuration)
        let context = try transportContexts.context(for: context, requirements: evaluator.store.transportSecurity.requirements(for: host.text))
        // TLS forbids an IP address in SNI; the chain is still checked against it.
        return try NIOSSLClientHandler(context: context, serverHostname: host.isIPAddress ? nil : host.text,
                                       customVerificationCallbackWithMetadata: verificationCallback(serverHostname: host.text, port: port,
                                                                                                    onAdmission: onAdmission))
    }

    /// `base` with ATS's handshake minimums for `serverHostname` applied (the minimum TLS version
    /// raised, only forward-secret suites kept, unless a `PinStore/TransportSecurityException`
    /// relaxes them): for callers that hand ``verificationCallback(serverHostname:port:onDecision:)``
    /// to a handler of their own. ``makeClientHandler(context:serverHostname:port:onDecision:)`` does
    /// this itself.
    ///
    /// ```swift
    /// let tls = try verifier.clientConfiguration(for: "api.example.com")
    /// let context = try NIOSSLContext(configuration: tls)
    /// ```
    ///
    /// - Throws: ``PinningTLSSetupError`` when `base` cannot meet them.
    public func clientConfiguration(for serverHostname: String, base: TLSConfiguration = .makeClientConfiguration()) throws -> TLSConfiguration {
        try TransportSecurityTLS.applying(evaluator.store.transportSecurity.requirements(for: serverHostname), to: base)
    }

    /// The transport minimum a failed handshake most likely missed, as the failure a refused
    /// chain would give: when swift-nio-ssl's error is a protocol-version refusal (the server
    /// speaks no TLS version at or above the host's minimum) or a handshake failure while only
    /// forward-secret suites were offered. Nil for any other error. Not reported to the store's
    /// metrics (the evaluator never saw the connection).
    ///
    /// ```swift
    /// } catch {
    ///     if let failure = verifier.transportSecurityFailure(for: error, serverHostname: host) { throw failure }
    ///     throw error
    /// }
    /// ```
    public func transportSecurityFailure(for error: any Error, serverHostname: String) -> PinningFailure? {
        let requirements = evaluator.store.transportSecurity.requirements(for: serverHostname)
        return TransportSecurityTLS.violation(for: error, requirements: requirements).map {
            PinningFailure(host: serverHostname, reason: .transportSecurityNotMet($0))
        }
    }

    /// A public `onDecision` as an `onAdmission` (the evidence is the pool's business).
    private static func ignoringEvidence(_ onDecision: (@Sendable (PinningDecision) -> Void)?)
        -> (@Sendable (PinningDecision, AdmissionGate.Evidence?) -> Void)? {
        guard let onDecision else { return nil }
        return { decision, _ in onDecision(decision) }
    }

    /// Refuses a configuration under which a verification callback is not enforced.
    static func checkVerificationEnabled(_ configuration: TLSConfiguration) throws(PinningTLSSetupError) {
        if case .none = configuration.certificateVerification {
            throw PinningTLSSetupError.certificateVerificationDisabled
        }
    }

    private static func complete(_ promise: EventLoopPromise<NIOSSLVerificationResultWithMetadata>, with decision: PinningDecision,
                                 evidence: AdmissionGate.Evidence?, onAdmission: (@Sendable (PinningDecision, AdmissionGate.Evidence?) -> Void)?,
                                 logger: Logger) {
        onAdmission?(decision, decision.isAllowed ? evidence : nil)
        switch decision {
        case .allow(let chain), .reportOnly(_, let chain):
            // Report-only: the pin check failed but its pins run report-only; the store has
            // reported it (PinningEvaluator.report). The chain passed the normal evaluation.
            do {
                let certificates = try chain.map { try NIOSSLCertificate(bytes: Array($0), format: .der) }
                guard !certificates.isEmpty else {
                    promise.succeed(.failed)
                    return
                }
                promise.succeed(.certificateVerified(VerificationMetadata(ValidatedCertificateChain(certificates))))
            } catch {
                logger.error("validated chain could not be handed to swift-nio-ssl; refusing", metadata: ["error": "\(error)"])
                promise.succeed(.failed)
            }
        case .deny(let failure):
            // Refusals reach the caller, the metrics and the store's decision stream; a log line
            // above debug would let one hostile host flood the app's logs.
            logger.debug("TLS connection refused by pinning", metadata: ["pinning.host": "\(failure.host)", "pinning.reason": "\(failure)"])
            promise.succeed(.failed)
        }
    }
}

/// A TLS setup that would void pinning.
public struct PinningTLSSetupError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable name for the problem.
    public let code: String
    /// What is wrong and what to do.
    public let reason: String

    /// `certificateVerification` is `.none` (or `.optionalVerification`): swift-nio-ssl does not
    /// enforce a verification callback then.
    public static let certificateVerificationDisabled = PinningTLSSetupError(
        code: "certificateVerificationDisabled",
        reason: "The TLSConfiguration has certificateVerification .none, under which swift-nio-ssl ignores a failed verification: pinning would silently do nothing. Use .fullVerification (the default of makeClientConfiguration()).")

    /// The TLS configuration cannot meet a host's ATS transport minimums (`PinStore/TransportSecurityException`).
    public static func transportMinimumUnreachable(_ why: String) -> PinningTLSSetupError {
        PinningTLSSetupError(code: "transportMinimumUnreachable",
                             reason: "The TLSConfiguration cannot meet the host's transport minimums: \(why). "
                                + "Remove the restriction, or add a TransportSecurityException for the host.")
    }

    /// The code and the reason.
    public var description: String { "\(code): \(reason)" }
    /// Equal when the codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

#if canImport(Security)
import Foundation
import Security

// Apple platforms only: URLSession there hands server-trust challenges to its delegate, so
// pinning is a challenge handler. (On Linux it never does: use PinStoreNIO's
// `URLSessionConfiguration.pinned(by:)` instead.) Kept thin on purpose: the decision itself is
// PinningEvaluator's one step (PinningRules), tested on Linux.

extension PinStore {
    /// Answers a URLSession authentication challenge: server-trust challenges go through the
    /// platform's normal trust evaluation (`SecTrustEvaluateWithError`) and then the pin check;
    /// every other challenge is passed on untouched with `.performDefaultHandling`.
    ///
    /// Trusted and pinned (or a pin failure in report-only mode, recorded first):
    /// `.performDefaultHandling` (the system evaluates as it always would). Anything else:
    /// `.cancelAuthenticationChallenge`, so no request byte is sent.
    ///
    /// Call it from an existing delegate:
    /// ```swift
    /// func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
    ///                 completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
    ///     store.handle(challenge, completionHandler: completionHandler)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - challenge: The challenge URLSession delivered.
    ///   - updateOnEmpty: Whether a host without pins triggers one forced update first.
    ///   - updateOnMismatch: Whether a valid chain matching no pin triggers one forced update
    ///     first (a partner's unannounced rotation). Downloads on behalf of refusals happen at
    ///     most once a minute per store; a download under way is shared.
    ///   - completionHandler: URLSession's completion handler.
    public func handle(_ challenge: URLAuthenticationChallenge, updateOnEmpty: Bool = true, updateOnMismatch: Bool = true,
                       completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
              let trust = challenge.protectionSpace.serverTrust else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        let host = challenge.protectionSpace.host
        let port = challenge.protectionSpace.port
        let step: PinningStep
        switch platformValidatedChain(trust, host: host) {
        case .success(let der):
            guard let name = try? HostName(host), let chain = ValidatedChain(trustEvaluationOutput: der) else {
                let failure = PinningFailure(host: host, reason: .chainNotTrusted(ChainValidationError(
                    .malformedCertificate, depth: 0, detail: "The host name or the evaluated chain could not be read.")))
                record(.deny(failure), host: host, port: port)
                step = .decided(.deny(failure))
                break
            }
            // SecTrust gives the evaluated chain only: it stands for the served one in reports.
            step = PinningEvaluator.step(store: self, host: name, requestedName: host, port: port, servedChain: der,
                                         validatedChain: chain, updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch)
        case .failure(let error):
            let decision = PinningDecision.deny(PinningFailure(host: host, reason: .chainNotTrusted(error)))
            record(decision, host: host, port: port)
            step = .decided(decision)
        }
        switch step {
        case .decided(let decision):
            complete(decision, completionHandler)
        case .updateFirst(let pending):
            Task { self.complete(await pending.decideAfterUpdate(), completionHandler) }
        }
    }

    /// Hands an already reported decision to URLSession.
    private func complete(_ decision: PinningDecision,
                          _ completionHandler: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        switch decision {
        case .allow, .reportOnly:
            // Report-only: the pin failure is recorded; the connection goes on.
            completionHandler(.performDefaultHandling, nil)
        case .deny(let failure):
            // Refusals go to the metrics and the decision stream; debug only, so a hostile
            // host cannot flood the app's logs.
            logger.debug("connection refused", metadata: ["pinstore.reason": "\(failure)"])
            completionHandler(.cancelAuthenticationChallenge, nil)
        }
    }

    /// The platform's normal evaluation, then the validated chain (leaf to anchor) as DER.
    ///
    /// A host under an enforcing CRL mode also gets the system's revocation policy (OCSP and
    /// CRLs, as the system fetches and caches them), on top of the pin rules' own CRL step;
    /// see `SystemRevocationPolicy`.
    private func platformValidatedChain(_ trust: SecTrust, host: String) -> Result<[Data], ChainValidationError> {
        if let name = try? HostName(host),
           let flags = SystemRevocationPolicy.flags(for: crl.mode(for: name, list: state.withLock { $0.list.crl })) {
            // `SecTrustSetPolicies` replaces the policies: the SSL policy URLSession set (host
            // name included) is kept by adding to what the trust object already holds. Failing
            // to add it refuses, so an enforcing host never loses the system's check silently.
            var current: CFArray?
            let revocation: SecPolicy? = SecPolicyCreateRevocation(flags)
            guard SecTrustCopyPolicies(trust, &current) == errSecSuccess, let revocation,
                  let policies = current as? [SecPolicy], !policies.isEmpty,
                  SecTrustSetPolicies(trust, (policies + [revocation]) as CFArray) == errSecSuccess else {
                return .failure(ChainValidationError(.other, depth: 0,
                                                     detail: "The system's revocation policy could not be added to the trust evaluation."))
            }
        }
        var error: CFError?
        guard SecTrustEvaluateWithError(trust, &error) else {
            let detail = error.map { String(describing: $0) } ?? "SecTrustEvaluateWithError refused the chain"
            return .failure(ChainValidationError(.other, depth: 0, detail: detail))
        }
        guard let certificates = SecTrustCopyCertificateChain(trust) as? [SecCertificate], !certificates.isEmpty else {
            return .failure(ChainValidationError(.emptyChain, depth: 0, detail: "The trust object holds no certificate chain."))
        }
        return .success(certificates.map { SecCertificateCopyData($0) as Data })
    }
}

/// A URLSession delegate that pins every server-trust challenge through a ``PinStore``
/// (Apple platforms). Other challenges get `.performDefaultHandling`.
///
/// ```swift
/// let session = URLSession(configuration: .default,
///                          delegate: PinningURLSessionDelegate(store: store),
///                          delegateQueue: nil)
/// ```
///
/// Apps with a delegate of their own call ``PinStore/handle(_:updateOnEmpty:updateOnMismatch:completionHandler:)``
/// from it instead.
public final class PinningURLSessionDelegate: NSObject, URLSessionTaskDelegate, Sendable {
    /// The pins.
    public let store: PinStore
    /// Whether a host without pins triggers one forced update first.
    public let updateOnEmpty: Bool
    /// Whether a valid chain matching no pin triggers one forced update first.
    public let updateOnMismatch: Bool

    /// Creates a delegate pinning through `store`.
    public init(store: PinStore, updateOnEmpty: Bool = true, updateOnMismatch: Bool = true) {
        self.store = store
        self.updateOnEmpty = updateOnEmpty
        self.updateOnMismatch = updateOnMismatch
    }

    /// Session-level challenges (server trust arrives here).
    public func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
                           completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        store.handle(challenge, updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch, completionHandler: completionHandler)
    }

    /// Task-level challenges (server trust may arrive here when no session-level method answers).
    public func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                           completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        store.handle(challenge, updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch, completionHandler: completionHandler)
    }
}
#endif

#if canImport(Security)
import Foundation
import Security

// Apple platforms only: URLSession there hands server-trust challenges to its delegate, so
// pinning is a challenge handler. (On Linux it never does: use PinStoreNIO's
// `URLSessionConfiguration.pinned(by:)` instead.) Kept thin on purpose: the decision itself is
// PinningEvaluator's, tested on Linux.

extension PinStore {
    /// Answers a URLSession authentication challenge: server-trust challenges go through the
    /// platform's normal trust evaluation (`SecTrustEvaluateWithError`) and then the pin check;
    /// every other challenge is passed on untouched with `.performDefaultHandling`.
    ///
    /// Trusted and pinned: `.performDefaultHandling` (the system evaluates as it always would).
    /// Anything else: `.cancelAuthenticationChallenge`, so no request byte is sent.
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
    ///   - updateOnEmpty: Whether a host without pins triggers one blocking forced update first
    ///     (at most one download a minute on behalf of such hosts; a download under way is shared).
    ///   - completionHandler: URLSession's completion handler.
    public func handle(_ challenge: URLAuthenticationChallenge, updateOnEmpty: Bool = false,
                       completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
              let trust = challenge.protectionSpace.serverTrust else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        let host = challenge.protectionSpace.host
        let validated: [Data]
        switch Self.platformValidatedChain(trust) {
        case .success(let chain):
            validated = chain
        case .failure(let error):
            let failure = PinningFailure(host: host, reason: .chainNotTrusted(error))
            logger.warning("connection refused", metadata: ["reason": "\(failure)"])
            completionHandler(.cancelAuthenticationChallenge, nil)
            return
        }
        let decision = PinningEvaluator.pinDecision(store: self, host: host, validatedChain: validated)
        if updateOnEmpty, case .deny(let failure) = decision, case .noPinsForHost = failure.reason {
            Task {
                let second = await PinningEvaluator.pinDecision(store: self, host: host, validatedChain: validated, updatingOnEmpty: true)
                self.complete(second, completionHandler)
            }
            return
        }
        complete(decision, completionHandler)
    }

    private func complete(_ decision: PinningDecision,
                          _ completionHandler: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        switch decision {
        case .allow:
            completionHandler(.performDefaultHandling, nil)
        case .deny(let failure):
            logger.warning("connection refused", metadata: ["reason": "\(failure)"])
            completionHandler(.cancelAuthenticationChallenge, nil)
        }
    }

    /// The platform's normal evaluation, then the validated chain (leaf to anchor) as DER.
    private static func platformValidatedChain(_ trust: SecTrust) -> Result<[Data], ChainValidationError> {
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
/// Apps with a delegate of their own call ``PinStore/handle(_:updateOnEmpty:completionHandler:)``
/// from it instead.
public final class PinningURLSessionDelegate: NSObject, URLSessionTaskDelegate, Sendable {
    /// The pins.
    public let store: PinStore
    /// Whether a host without pins triggers one blocking forced update first.
    public let updateOnEmpty: Bool

    /// Creates a delegate pinning through `store`.
    public init(store: PinStore, updateOnEmpty: Bool = false) {
        self.store = store
        self.updateOnEmpty = updateOnEmpty
    }

    /// Session-level challenges (server trust arrives here).
    public func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
                           completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        store.handle(challenge, updateOnEmpty: updateOnEmpty, completionHandler: completionHandler)
    }

    /// Task-level challenges (server trust may arrive here when no session-level method answers).
    public func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                           completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        store.handle(challenge, updateOnEmpty: updateOnEmpty, completionHandler: completionHandler)
    }
}
#endif

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension PinningFailure {
    /// The pinning failure behind `error`, however an adapter or a library above it wrapped it;
    /// nil when `error` is not a pinning refusal.
    ///
    /// It finds the failure thrown as itself (AsyncHTTPClient), under a `URLError`'s
    /// `NSUnderlyingErrorKey` (the pinned `URLSession`), and in an error that keeps another
    /// error as a stored property (OpenAPI runtime's `ClientError.underlyingError`, and
    /// wrappers like it), up to four levels deep.
    ///
    /// ```swift
    /// do {
    ///     _ = try await client.getItems()
    /// } catch {
    ///     if let failure = PinningFailure(unwrapping: error) {
    ///         logger.error("partner refused by pinning", metadata: ["reason": "\(failure.summary)"])
    ///     }
    /// }
    /// ```
    public init?(unwrapping error: any Error) {
        guard let failure = Self.find(in: error, depth: 0) else { return nil }
        self = failure
    }

    private static func find(in error: any Error, depth: Int) -> PinningFailure? {
        if let failure = error as? PinningFailure { return failure }
        guard depth < 4 else { return nil }
        if let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? any Error,
           let failure = find(in: underlying, depth: depth + 1) {
            return failure
        }
        // Wrappers from libraries this module does not (and should not) import keep the error
        // in a stored property; reflection reads it without depending on them.
        for child in Mirror(reflecting: error).children {
            if let inner = child.value as? any Error, let failure = find(in: inner, depth: depth + 1) {
                return failure
            }
        }
        return nil
    }
}

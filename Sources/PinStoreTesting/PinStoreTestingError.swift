/// Why the test kit could not make a key, a certificate or a server.
///
/// ```swift
/// do {
///     let pki = try TestPKI(hosts: ["localhost"])
/// } catch {
///     print(error.message, error.openSSLErrors)
/// }
/// ```
public struct PinStoreTestingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as one sentence for people.
    public let message: String
    /// The messages OpenSSL queued when one of its calls failed, oldest first (empty otherwise).
    public let openSSLErrors: [String]

    /// Creates an error.
    package init(_ message: String, openSSLErrors: [String] = []) {
        self.message = message
        self.openSSLErrors = openSSLErrors
    }

    /// The message, followed by OpenSSL's own messages when there are any.
    public var description: String {
        openSSLErrors.isEmpty ? message : "\(message) (OpenSSL: \(openSSLErrors.joined(separator: "; ")))"
    }
}

// What Apple's Foundation holds that Linux's splits off, for the macOS type-check on Linux.
// MacOSView.swift appends `import _MacOSFoundation` to every `import Foundation` of the macOS
// view, so that view sees one Foundation, as a Mac does:
// - URLSession and friends (FoundationNetworking on Linux), XMLParser (FoundationXML);
// - the server-trust members Linux declares unavailable or lacks: `URLProtectionSpace.serverTrust`,
//   `URLCredential(trust:)`, `NSURLAuthenticationMethodServerTrust` (signatures of the macOS SDK;
//   swift-corelibs-foundation's `URLProtectionSpace.swift` marks its own unavailable, and the
//   type checker prefers these available ones).
@_exported import Foundation
@_exported import FoundationNetworking
@_exported import FoundationXML
import Security

public let NSURLAuthenticationMethodServerTrust: String = "NSURLAuthenticationMethodServerTrust"

extension URLProtectionSpace {
    /// `var serverTrust: SecTrust? { get }` on Apple platforms.
    public var serverTrust: SecTrust? { fatalError("stub") }
}

extension URLCredential {
    /// `init(trust: SecTrust)` on Apple platforms.
    public convenience init(trust: SecTrust) { fatalError("stub") }
}

// A stub of Apple's Security framework for the macOS type-check on Linux: the declarations
// the package calls, with the Swift signatures of the macOS 13+ SDK (swift-nio-ssl's
// `SecurityFrameworkCertificateVerification.swift` calls the same functions). Bodies are
// never run.
//
// Core Foundation's types are toll-free bridged to Foundation's on a Mac (`cfData as Data`,
// `cfArray as? [SecCertificate]`); Linux has no CF module to import, so they are aliases of the
// bridged Foundation classes here. That admits NSData's methods on a CFData, which a Mac would
// refuse: keep to bridging casts.
import Foundation

public typealias CFData = NSData
public typealias CFArray = NSArray
public typealias CFString = NSString
public typealias CFError = NSError
public typealias CFTypeRef = AnyObject
public typealias CFIndex = Int
public typealias OSStatus = Int32
public typealias CFOptionFlags = UInt

/// `CFAllocator` (only ever passed as nil by the package).
public final class CFAllocator {}

/// `SecTrust`: a trust evaluation (`SecTrustRef`).
public final class SecTrust {}
/// `SecCertificate` (`SecCertificateRef`).
public final class SecCertificate {}
/// `SecPolicy` (`SecPolicyRef`).
public final class SecPolicy {}

public var errSecSuccess: OSStatus { 0 }

public typealias SecTrustWithErrorCallback = (SecTrust, Bool, CFError?) -> Void

public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool {
    fatalError("stub")
}
@available(macOS 10.15, *)
public func SecTrustEvaluateAsyncWithError(_ trust: SecTrust, _ queue: DispatchQueue,
                                           _ result: @escaping SecTrustWithErrorCallback) -> OSStatus {
    fatalError("stub")
}
@available(macOS 12.0, *)
public func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray? { fatalError("stub") }
public func SecTrustGetCertificateCount(_ trust: SecTrust) -> CFIndex { fatalError("stub") }
public func SecTrustCreateWithCertificates(_ certificates: CFTypeRef, _ policies: CFTypeRef?,
                                           _ trust: UnsafeMutablePointer<SecTrust?>) -> OSStatus {
    fatalError("stub")
}
public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray) -> OSStatus {
    fatalError("stub")
}
public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus {
    fatalError("stub")
}
public func SecTrustSetPolicies(_ trust: SecTrust, _ policies: CFTypeRef) -> OSStatus { fatalError("stub") }
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData { fatalError("stub") }
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    fatalError("stub")
}
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> CFString? { fatalError("stub") }
public func SecPolicyCreateSSL(_ server: Bool, _ hostname: CFString?) -> SecPolicy { fatalError("stub") }
public func SecPolicyCreateRevocation(_ revocationFlags: CFOptionFlags) -> SecPolicy? { fatalError("stub") }
public func SecTrustCopyPolicies(_ trust: SecTrust, _ policies: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    fatalError("stub")
}

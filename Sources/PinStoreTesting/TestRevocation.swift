import Foundation
import PinStore

/// One entry of the `revocations` section a fixture list carries (``TestPinList/revocations``).
///
/// ```swift
/// var list = TestPinList(entries: [caKeyPin])
/// list.revocations = [.certificate(stolen.certificate)]          // refused on every adapter
/// list.revocations = [.key(of: pki.intermediate)]                // every leaf below it refused
/// ```
public struct TestRevocation: Sendable, Hashable {
    let wire: ListRevocations.Wire

    /// Revokes the key of `certificate` wherever it appears in a chain (marked `leaf` when the
    /// certificate cannot issue others).
    public static func key(of certificate: X509Certificate) -> TestRevocation {
        TestRevocation(wire: .key(of: certificate))
    }

    /// Revokes `certificate` (its SHA-256; marked `leaf` when it cannot issue others).
    public static func certificate(_ certificate: X509Certificate) -> TestRevocation {
        TestRevocation(wire: .certificate(certificate))
    }

    /// Revokes `certificate` by its serial number under `issuer`'s key.
    public static func issuerSerial(of certificate: X509Certificate, issuer: X509Certificate) -> TestRevocation {
        TestRevocation(wire: .issuerSerial(of: certificate, issuerKeySHA256: Data(base64Encoded: issuer.spkiSHA256Base64) ?? Data()))
    }
}

import Foundation
import NIOCore
import NIOSSL
import PinStore

/// ATS's handshake minimums (TLS version, forward-secret key exchange) as swift-nio-ssl
/// configuration, and the mapping of a handshake the TLS stack refused back to the requirement.
package enum TransportSecurityTLS {
    /// The forward-secret (ECDHE) suites offered for TLS 1.2 and below: ATS's list (ECDHE with
    /// ECDSA or RSA, AES-GCM or AES-CBC) plus ChaCha20-Poly1305. TLS 1.3 suites are always
    /// forward-secret and are not configurable in swift-nio-ssl.
    package static let forwardSecretSuites: [NIOTLSCipher] = [
        .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        .TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, .TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
        .TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, .TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
    ]

    /// Whether a TLS 1.2-and-below suite has forward-secret, certificate-authenticated key
    /// exchange (ECDHE_ECDSA or ECDHE_RSA), by IANA code point.
    package static func isForwardSecret(_ suite: NIOTLSCipher) -> Bool {
        // ECDHE_ECDSA and ECDHE_RSA suites (RFC 4492, 5289, 7905), and TLS 1.3's.
        [0xC009, 0xC00A, 0xC013, 0xC014, 0xC023, 0xC024, 0xC027, 0xC028, 0xC02B, 0xC02C, 0xC02F, 0xC030, 0xCCA8, 0xCCA9]
            .contains(suite.rawValue) || suite.rawValue & 0xFF00 == 0x1300
    }

    /// `configuration` with `requirements` applied: the minimum version raised to the required
    /// one, and with forward secrecy required only forward-secret suites kept (swift-nio-ssl's
    /// default list becomes ``forwardSecretSuites``). Never lowers what `configuration` asks.
    ///
    /// - Throws: ``PinningTLSSetupError`` when the configuration cannot meet the requirements
    ///   (a maximum version below the required minimum, no forward-secret suite left).
    package static func applying(_ requirements: TransportSecurityRequirements, to configuration: TLSConfiguration) throws(PinningTLSSetupError) -> TLSConfiguration {
        var tls = configuration
        let required = requirements.minimumTLSVersion
        if TLSProtocolVersion(tls.minimumTLSVersion) < required {
            tls.minimumTLSVersion = required.nio
        }
        if let maximum = tls.maximumTLSVersion, TLSProtocolVersion(maximum) < required {
            throw .transportMinimumUnreachable("maximumTLSVersion \(TLSProtocolVersion(maximum).rawValue) is below the required minimum \(required.rawValue)")
        }
        guard requirements.requiresForwardSecrecy else { return tls }
        if tls.cipherSuites == defaultCipherSuites {
            tls.cipherSuiteValues = forwardSecretSuites
            return tls
        }
        // A list of the caller's own: keep its forward-secret suites (resolving the string makes a
        // context once; this runs once per configuration and host requirements).
        let kept = tls.cipherSuiteValues.filter(isForwardSecret)
        if kept.isEmpty {
            guard required >= .tlsv13 else {
                throw .transportMinimumUnreachable("cipherSuites \"\(tls.cipherSuites)\" holds no forward-secret (ECDHE) suite")
            }
            tls.cipherSuiteValues = forwardSecretSuites
        } else {
            tls.cipherSuiteValues = kept
        }
        return tls
    }

    /// The requirement a handshake refused by the TLS stack itself most likely failed, when the
    /// error says so: a protocol-version alert or error names the minimum version; a handshake
    /// failure alert (or no shared cipher) while only forward-secret suites were offered names
    /// forward secrecy. Nil for any other error.
    package static func violation(for error: any Error, requirements: TransportSecurityRequirements) -> TransportSecurityViolation? {
        guard let error = error as? NIOSSLError, case .handshakeFailed = error else { return nil }
        let text = String(describing: error)
        if text.contains("UNSUPPORTED_PROTOCOL") || text.contains("PROTOCOL_VERSION") {
            return TransportSecurityViolation(requirement: .minimumTLSVersion,
                detail: "the server accepts no TLS version at or above \(requirements.minimumTLSVersion.rawValue) (handshake refused: \(text))")
        }
        if requirements.requiresForwardSecrecy,
           text.contains("HANDSHAKE_FAILURE") || text.contains("NO_SHARED_CIPHER") || text.contains("NO_CIPHER_MATCH") {
            return TransportSecurityViolation(requirement: .forwardSecrecy,
                detail: "the server refused the handshake while only forward-secret (ECDHE) suites were offered; the TLS alert does not say why: "
                    + "most often the server offers only RSA key exchange, but a server with no curve or signature algorithm in common "
                    + "ends the same way (check with `openssl s_client -connect HOST:PORT -tls1_2`) (handshake refused: \(text))")
        }
        return nil
    }
}

extension TLSProtocolVersion {
    package init(_ version: TLSVersion) {
        switch version {
        case .tlsv1: self = .tlsv10
        case .tlsv11: self = .tlsv11
        case .tlsv12: self = .tlsv12
        case .tlsv13: self = .tlsv13
        }
    }

    package var nio: TLSVersion {
        switch self {
        case .tlsv10: .tlsv1
        case .tlsv11: .tlsv11
        case .tlsv12: .tlsv12
        case .tlsv13: .tlsv13
        }
    }
}

/// The TLS contexts a ``PinningTLSVerifier`` uses per caller context and host requirements: the
/// caller's own when it already meets them, otherwise one derived from it (made once, kept while
/// the caller's context lives).
final class TransportSecurityContexts: Sendable {
    private struct Entry {
        weak var source: NIOSSLContext?
        let requirements: TransportSecurityRequirements
        let context: Result<Made, PinningTLSSetupError>
    }

    private enum Made {
        /// The source already meets the requirements (not held here: the entry must not keep
        /// its source alive).
        case source
        case derived(NIOSSLContext)
    }

    /// Few distinct (context, requirements) pairs exist in a process; past this many, entries
    /// whose source context is gone are dropped, then the oldest.
    private static let limit = 64
    private let entries = Locked<[Entry]>([])

    func context(for source: NIOSSLContext, requirements: TransportSecurityRequirements) throws(PinningTLSSetupError) -> NIOSSLContext {
        if let known = entries.withLock({ $0.first { $0.source === source && $0.requirements == requirements }?.context }) {
            return try Self.context(known, source: source)
        }
        let made: Result<Made, PinningTLSSetupError>
        do {
            let derived = try TransportSecurityTLS.applying(requirements, to: source.configuration)
            if derived.bestEffortEquals(source.configuration) {
                made = .success(.source)
            } else {
                do {
                    made = .success(.derived(try NIOSSLContext(configuration: derived)))
                } catch {
                    made = .failure(.transportMinimumUnreachable("the TLS context with the transport minimums could not be made: \(error)"))
                }
            }
        } catch {
            made = .failure(error)
        }
        entries.withLock { entries in
            if entries.count >= Self.limit {
                entries.removeAll { $0.source == nil }
                if entries.count >= Self.limit { entries.removeFirst() }
            }
            entries.append(Entry(source: source, requirements: requirements, context: made))
        }
        return try Self.context(made, source: source)
    }

    private static func context(_ made: Result<Made, PinningTLSSetupError>, source: NIOSSLContext) throws(PinningTLSSetupError) -> NIOSSLContext {
        switch made {
        case .success(.source): source
        case .success(.derived(let context)): context
        case .failure(let error): throw error
        }
    }
}

import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

@Suite struct ChainValidatorTests {
    /// A time inside every "valid" fixture's period (2030-01-01T00:00:00Z).
    static let now = Date(timeIntervalSince1970: 1_893_456_000)

    static func privateRoot() throws -> TrustRoots {
        .anchors([try TestResources.certificate("pki/root-ca.pem")])
    }

    func validate(_ files: String..., host: String = "localhost", roots: TrustRoots? = nil, at time: Date = now) throws -> [X509Certificate] {
        let chain = try files.flatMap { try TestResources.chainDER($0) }
        return try ChainValidator(trustRoots: roots ?? Self.privateRoot()).validate(chain: chain, hostname: host, at: time)
    }

    func failure(_ files: String..., host: String = "localhost", roots: TrustRoots? = nil, at time: Date = now) throws -> ChainValidationError.Reason? {
        let chain = try files.flatMap { try TestResources.chainDER($0) }
        do {
            _ = try ChainValidator(trustRoots: roots ?? Self.privateRoot()).validate(chain: chain, hostname: host, at: time)
            return nil
        } catch let error as ChainValidationError {
            return error.reason
        }
    }

    @Test func goodChainValidatesLeafToAnchor() throws {
        let chain = try validate("pki/localhost-chain.pem")
        #expect(chain.map(\.commonName) == ["localhost", "PinStore Test Intermediate CA", "PinStore Test Root CA"])
    }

    @Test func goodChainValidatesForIPAddressInSAN() throws {
        #expect(try validate("pki/localhost-chain.pem", host: "127.0.0.1").count == 3)
    }

    @Test func goodChainValidatesWithAnchorsPlusSystemStore() throws {
        let roots = TrustRoots.anchors([try TestResources.certificate("pki/root-ca.pem")], includingSystem: true)
        #expect(try validate("pki/localhost-chain.pem", roots: roots).count == 3)
    }

    @Test func privateChainIsUnknownIssuerAgainstSystemStore() throws {
        #expect(try failure("pki/localhost-chain.pem", roots: .system) == .unknownIssuer)
    }

    @Test func missingIntermediateIsUnknownIssuer() throws {
        #expect(try failure("pki/localhost.pem") == .unknownIssuer)
    }

    @Test func rogueRootIsUnknownIssuer() throws {
        #expect(try failure("pki/rogue-leaf.pem", "pki/rogue-root-ca.pem") == .untrustedSelfSigned)
        #expect(try failure("pki/rogue-leaf.pem") == .unknownIssuer)
    }

    @Test func expiredLeafIsExpired() throws {
        #expect(try failure("pki/expired.pem", "pki/intermediate-ca.pem") == .expired)
    }

    @Test func validLeafEvaluatedAfterItsEndIsExpired() throws {
        #expect(try failure("pki/localhost-chain.pem", at: Date(timeIntervalSince1970: 4_102_444_800 + 86_400)) == .expired)
    }

    @Test func notYetValidLeafIsNotYetValid() throws {
        #expect(try failure("pki/not-yet-valid.pem", "pki/intermediate-ca.pem") == .notYetValid)
    }

    @Test func wrongHostLeafIsHostnameMismatch() throws {
        #expect(try failure("pki/wrong-host.pem", "pki/intermediate-ca.pem") == .hostnameMismatch)
    }

    @Test func goodLeafForAnotherHostIsHostnameMismatch() throws {
        #expect(try failure("pki/localhost-chain.pem", host: "api.pinstore.test") == .hostnameMismatch)
        #expect(try failure("pki/localhost-chain.pem", host: "127.0.0.2") == .hostnameMismatch)
    }

    @Test func wildcardCoversExactlyOneLabel() throws {
        #expect(try validate("pki/wildcard.pem", "pki/intermediate-ca.pem", host: "api.pinstore.test").count == 3)
        #expect(try failure("pki/wildcard.pem", "pki/intermediate-ca.pem", host: "a.b.pinstore.test") == .hostnameMismatch)
        #expect(try failure("pki/wildcard.pem", "pki/intermediate-ca.pem", host: "pinstore.test") == .hostnameMismatch)
    }

    @Test func selfSignedLeafIsRefusedWithoutAnAnchor() throws {
        #expect(try failure("pki/self-signed.pem") == .untrustedSelfSigned)
        #expect(try failure("pki/self-signed.pem", roots: .system) == .untrustedSelfSigned)
    }

    @Test func selfSignedLeafIsAcceptedWhenConfiguredAsAnchor() throws {
        let roots = TrustRoots.anchors([try TestResources.certificate("pki/self-signed.pem")])
        #expect(try validate("pki/self-signed.pem", roots: roots).count == 1)
    }

    @Test func leafSignedByALeafIsNotACertificateAuthority() throws {
        #expect(try failure("pki/leaf-signed-by-leaf.pem", "pki/localhost.pem", "pki/intermediate-ca.pem") == .notACertificateAuthority)
    }

    @Test func alteredSignatureIsBadSignature() throws {
        var chain = try TestResources.chainDER("pki/localhost-chain.pem")
        // The last bytes of a certificate are the signature's s value; flipping one keeps the
        // DER well formed but breaks the signature.
        chain[0][chain[0].count - 2] ^= 0x01
        do {
            _ = try ChainValidator(trustRoots: Self.privateRoot()).validate(chain: chain, hostname: "localhost", at: Self.now)
            Issue.record("a certificate with a broken signature validated")
        } catch let error as ChainValidationError {
            #expect(error.reason == .badSignature)
            #expect(error.depth == 0)
        }
    }

    @Test func attackerLeafChainedToTrustedCAPassesNormalEvaluation() throws {
        // The reason pinning exists: a CA-valid certificate for the right name, but another key.
        #expect(try validate("pki/attacker-chain.pem").first?.commonName == "localhost")
    }

    @Test func emptyChainIsRefused() throws {
        #expect(throws: ChainValidationError.self) {
            try ChainValidator(trustRoots: Self.privateRoot()).validate(chain: [], hostname: "localhost", at: Self.now)
        }
    }

    @Test func garbageInChainIsMalformedCertificate() throws {
        var chain = try TestResources.chainDER("pki/localhost-chain.pem")
        chain[1] = Data([0x30, 0x03, 0x02, 0x01])
        #expect(try failure2(chain) == .malformedCertificate)
    }

    func failure2(_ chain: [Data]) throws -> ChainValidationError.Reason? {
        do {
            _ = try ChainValidator(trustRoots: Self.privateRoot()).validate(chain: chain, hostname: "localhost", at: Self.now)
            return nil
        } catch let error as ChainValidationError { return error.reason }
    }
}

/// Repeat verifications reuse a recent success only where it certainly applies.
@Suite struct VerifiedChainCacheTests {
    let roots: TrustRoots
    let validator: ChainValidator
    let chain: [Data]

    init() throws {
        roots = .anchors([try TestResources.certificate("pki/root-ca.pem")])
        validator = ChainValidator(trustRoots: roots)
        chain = try TestResources.chainDER("pki/localhost-chain.pem")
        _ = try validator.validate(chain: chain, hostname: "localhost", at: ChainValidatorTests.now)
    }

    func reason(_ chain: [Data], host: String = "localhost", at time: Date = ChainValidatorTests.now) -> ChainValidationError.Reason? {
        do {
            _ = try validator.validatedDER(chain: chain, hostname: host, at: time)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func successIsCachedForTheSameChainAndHost() {
        let key = VerifiedChainCache.Key(hostname: "localhost", chain: chain)!
        #expect(roots.store.cache.chain(for: key, at: Int64(ChainValidatorTests.now.timeIntervalSince1970))?.count == 3)
        #expect(reason(chain) == nil)
    }

    @Test func cachedSuccessDoesNotAnswerForAnotherHost() {
        #expect(reason(chain, host: "api.pinstore.test") == .hostnameMismatch)
    }

    @Test func cachedSuccessDoesNotAnswerOutsideTheValidityWindow() {
        #expect(reason(chain, at: Date(timeIntervalSince1970: 4_102_444_800 + 86_400)) == .expired)
        #expect(reason(chain, at: Date(timeIntervalSince1970: 1_700_000_000)) == .notYetValid)
    }

    @Test func cachedSuccessDoesNotAnswerAtTheNotAfterSecondItself() {
        // OpenSSL counts a certificate as expired from its notAfter second on; so does the cache.
        #expect(reason(chain, at: Date(timeIntervalSince1970: 4_102_444_799)) == .expired)
        #expect(reason(chain, at: Date(timeIntervalSince1970: 4_102_444_798)) == nil)
    }

    @Test func cachedSuccessDoesNotAnswerForAnAlteredChain() {
        var altered = chain
        altered[0][altered[0].count - 2] ^= 0x01
        #expect(reason(altered) == .badSignature)
    }

    @Test func refusalsAreNotCached() {
        let attacker = (try? TestResources.chainDER("pki/expired.pem", "pki/intermediate-ca.pem")) ?? []
        #expect(reason(attacker) == .expired)
        #expect(roots.store.cache.chain(for: VerifiedChainCache.Key(hostname: "localhost", chain: attacker)!, at: Int64(ChainValidatorTests.now.timeIntervalSince1970)) == nil)
    }
}

import Foundation
import PinStore
import PinStoreTesting
import Testing

/// The kit's certificates, judged by PinStore's own chain validator.
@Suite struct TestPKITests {
    static let hosts = ["localhost", "api.example.test"]

    @Test(arguments: hosts) func leafChainsToTheRootForEachOfItsNames(host: String) throws {
        let pki = try TestPKI(hosts: Self.hosts)
        let chain = try ChainValidator(trustRoots: pki.trustRoots).validate(chain: pki.leaf.chainDER, hostname: host)
        #expect(chain.map(\.fingerprint) == [pki.leaf.certificate.fingerprint, pki.intermediate.fingerprint, pki.root.fingerprint])
    }

    @Test func leafIsRefusedForANameItDoesNotCarry() throws {
        let pki = try TestPKI(hosts: Self.hosts)
        let error = #expect(throws: ChainValidationError.self) {
            try ChainValidator(trustRoots: pki.trustRoots).validate(chain: pki.leaf.chainDER, hostname: "other.example.test")
        }
        #expect(error?.reason == .hostnameMismatch)
    }

    @Test func impostorDoesNotChainToTheGenuineRoot() throws {
        let pki = try TestPKI(hosts: Self.hosts)
        let error = #expect(throws: ChainValidationError.self) {
            try ChainValidator(trustRoots: pki.trustRoots).validate(chain: pki.impostor.chainDER, hostname: "localhost")
        }
        #expect(error?.reason == .unknownIssuer)
    }

    @Test func impostorChainsToItsOwnCAForTheSameNames() throws {
        let pki = try TestPKI(hosts: Self.hosts)
        let validator = ChainValidator(trustRoots: .anchors([pki.impostorRoot]))
        for host in Self.hosts {
            let chain = try validator.validate(chain: pki.impostor.chainDER, hostname: host)
            #expect(chain.last?.fingerprint == pki.impostorRoot.fingerprint)
        }
        #expect(pki.impostor.certificate.dnsNames == pki.leaf.certificate.dnsNames)
        #expect(pki.impostor.certificate.fingerprint != pki.leaf.certificate.fingerprint)
    }

    @Test func leafIsValidForTheChosenPeriod() throws {
        let start = Date(timeIntervalSince1970: 1_900_000_000)
        let pki = try TestPKI(hosts: ["localhost"], validity: DateInterval(start: start, duration: 86_400))
        #expect(pki.leaf.certificate.notBefore == start)
        #expect(pki.leaf.certificate.notAfter == start.addingTimeInterval(86_400))
    }

    @Test func leafIssuedForAnExpiredPeriodIsRefusedAsExpired() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let expired = try pki.issueLeaf(for: ["localhost"], validity: DateInterval(start: Date().addingTimeInterval(-10 * 86_400), duration: 86_400))
        let error = #expect(throws: ChainValidationError.self) {
            try ChainValidator(trustRoots: pki.trustRoots).validate(chain: expired.chainDER, hostname: "localhost")
        }
        #expect(error?.reason == .expired)
    }

    @Test func issuedLeafValidatesForItsOwnNames() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let other = try pki.issueLeaf(for: ["partner.example.test"])
        _ = try ChainValidator(trustRoots: pki.trustRoots).validate(chain: other.chainDER, hostname: "partner.example.test")
        #expect(other.certificate.dnsNames == ["partner.example.test"])
    }

    @Test func nameThatIsNotADNSNameIsRefusedWithATypedError() {
        #expect(throws: PinStoreTestingError.self) { try TestPKI(hosts: ["bad name,DNS:evil.test"]) }
    }

    @Test func privateKeyMatchesTheLeafForTLS() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        #expect(pki.leaf.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try X509Certificate.certificates(pem: pki.leaf.certificateChainPEM) == pki.leaf.chain)
    }
}

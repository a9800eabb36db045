import AsyncHTTPClient
import Foundation
import PinStore
import PinStoreAsyncHTTPClient
import Testing

/// AsyncHTTPClient shows only the leaf; SCTs are signed over the issuer's key, so a store that
/// requires Certificate Transparency everywhere cannot pin an `HTTPClient`: refused at
/// configuration, never skipped.
@Suite struct CertificateTransparencyHTTPClientTests {
    static func store(mode: CertificateTransparencyMode, exceptions: [TransportSecurityException] = []) throws -> PinStore {
        let base = try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")], exceptions: exceptions)
        var configuration = base.configuration
        configuration.certificateTransparency = mode
        configuration.storageDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-ahc-ct-\(UUID().uuidString)")
        return try PinStore(configuration: configuration)
    }

    @Test func aStoreThatEnforcesCTEverywhereCannotPinAnHTTPClient() throws {
        let store = try Self.store(mode: .enforce)
        let error = #expect(throws: PinnedHTTPClientError.self) { _ = try HTTPClient.Configuration.pinned(by: store) }
        #expect(error?.code == .certificateTransparencyNeedsChain)
        #expect(error?.reason.contains("PinStoreNIO") == true)
    }

    @Test func aStoreThatReportsCTEverywhereCannotPinAnHTTPClient() throws {
        let error = #expect(throws: PinnedHTTPClientError.self) { _ = try HTTPClient.Configuration.pinned(by: try Self.store(mode: .reportOnly)) }
        #expect(error?.code == .certificateTransparencyNeedsChain)
    }

    @Test func anATSExceptionRequiringCTCannotPinAnHTTPClient() throws {
        let store = try Self.store(mode: .off, exceptions: [TransportSecurityException(domain: "localhost", requiresCertificateTransparency: true)])
        let error = #expect(throws: PinnedHTTPClientError.self) { _ = try HTTPClient.Configuration.pinned(by: store) }
        #expect(error?.code == .certificateTransparencyNeedsChain)
    }

    @Test func aStoreWithoutCTPinsAnHTTPClient() throws {
        _ = try HTTPClient.Configuration.pinned(by: try Self.store(mode: .off))
    }
}

/// The same for CRLs: a store that checks CRLs for every host cannot pin an `HTTPClient`
/// (the CRL is verified with the issuer's key, which AsyncHTTPClient never shows).
@Suite struct CRLHTTPClientTests {
    static func store(mode: CRLCheckMode) throws -> PinStore {
        var configuration = try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")]).configuration
        configuration.crlMode = mode
        configuration.storageDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-ahc-crl-\(UUID().uuidString)")
        return try PinStore(configuration: configuration)
    }

    @Test func aStoreThatChecksCRLsEverywhereCannotPinAnHTTPClient() throws {
        let error = #expect(throws: PinnedHTTPClientError.self) { _ = try HTTPClient.Configuration.pinned(by: try Self.store(mode: CRLCheckMode.enforceSoftFail)) }
        #expect(error?.code == .crlNeedsChain)
        #expect(error?.reason.contains("PinStoreNIO") == true)
    }

    @Test func aStoreWithoutCRLsPinsAnHTTPClient() throws {
        _ = try HTTPClient.Configuration.pinned(by: try Self.store(mode: .off))
    }
}

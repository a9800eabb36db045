#if canImport(FoundationNetworking)
// The Swift Testing example of the DocC article "Testing your pinning", word for word
// (scripts/check-doc-examples.sh checks it).
import Foundation
import FoundationNetworking
import PinStore
import PinStoreNIO
import PinStoreTesting
import Testing

@Test func pinnedSessionRefusesTheImpostor() async throws {
    try await PinningTestFixture.withFixture { fixture in
        let session = URLSession(configuration: .pinned(by: fixture.store, trustRoots: fixture.trustRoots))
        let error = await #expect(throws: URLError.self) { try await session.data(from: fixture.impostorURL) }
        #expect(error?.code == .serverCertificateUntrusted)
    }
}
#endif

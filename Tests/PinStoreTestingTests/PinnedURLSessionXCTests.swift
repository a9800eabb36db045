#if canImport(FoundationNetworking)
// The XCTest suite the DocC article "Testing your pinning" (PinStoreTesting) shows, word for
// word (scripts/check-doc-examples.sh checks it): a pinned URLSession (Linux) against the kit's
// genuine and impostor servers.
import Foundation
import FoundationNetworking
import PinStore
import PinStoreNIO
import PinStoreTesting
import XCTest

final class PinnedURLSessionXCTests: XCTestCase {
    var fixture: PinningTestFixture!

    override func setUp() async throws {
        fixture = try await PinningTestFixture.start(hosts: ["localhost"])
    }

    override func tearDown() async throws {
        try await fixture.shutdown()
    }

    func testPinnedSessionReachesTheGenuineServer() async throws {
        let session = URLSession(configuration: .pinned(by: fixture.store, trustRoots: fixture.trustRoots))
        let (data, response) = try await session.data(from: fixture.serverURL)
        XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 200)
        XCTAssertEqual(String(decoding: data, as: UTF8.self), TestHTTPSServer.responseBody)
    }

    func testPinnedSessionRefusesTheImpostor() async throws {
        let session = URLSession(configuration: .pinned(by: fixture.store, trustRoots: fixture.trustRoots))
        do {
            _ = try await session.data(from: fixture.impostorURL)
            XCTFail("the impostor was reached")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .serverCertificateUntrusted)
            XCTAssertEqual((error.userInfo[NSUnderlyingErrorKey] as? PinningFailure)?.reason, .pinMismatch)
        }
    }

    func testImpostorReceivesNoRequest() async throws {
        let session = URLSession(configuration: .pinned(by: fixture.store, trustRoots: fixture.trustRoots))
        _ = try? await session.data(from: fixture.impostorURL)
        XCTAssertEqual(fixture.impostorServer.requestCount, 0)
    }
}
#endif

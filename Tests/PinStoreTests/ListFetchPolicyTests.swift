import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Which list URLs a store may fetch from: plain http only when the configured URL is itself
/// a loopback http URL, so a production https list cannot be redirected to local plain http.
@Suite struct ListFetchPolicyTests {
    @Test func anHTTPSServiceURLNeverAllowsPlainHTTPOnLoopback() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        _ = await store.update(mode: .forced)
        let request = try #require(fetcher.lastRequest)
        #expect(request.allowsLoopbackHTTP == false)
    }

    @Test func aLoopbackHTTPServiceURLAllowsPlainHTTPOnLoopback() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let configuration = try StoreFixtures.configuration(directory: directory.url,
                                                            serviceURL: URL(string: "http://127.0.0.1:9/list.json")!)
        let store = try PinStore(configuration: configuration, fetcher: fetcher, clock: ManualClock.inValidPeriod())
        _ = await store.update(mode: .forced)
        #expect(fetcher.lastRequest?.allowsLoopbackHTTP == true)
    }

    @Test(arguments: ["https://pins.example.net/l", "http://pins.example.net/l", "ftp://127.0.0.1/l", "https://127.0.0.1/l"])
    func onlyPlainHTTPOnALoopbackHostCountsAsLoopbackHTTP(url: String) throws {
        #expect(try #require(URL(string: url)).isLoopbackHTTP == false)
    }
}

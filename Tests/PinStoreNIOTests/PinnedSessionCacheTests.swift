#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreNIO
import PinStoreTestSupport
import Testing

/// A pinned session does not cache: every request goes to the server, through the pin check
/// (issue 33; FoundationNetworking's cache lookup cost a quarter of a pinned request).
@Suite struct PinnedSessionCacheTests {
    static func cache() -> URLCache {
        URLCache(memoryCapacity: 1 << 20, diskCapacity: 0, diskPath: nil)
    }

    @Test func thePinnedConfigurationHasNoCacheEvenWhenItsBaseHadOne() throws {
        let base = URLSessionConfiguration.default
        base.urlCache = Self.cache()
        base.requestCachePolicy = .returnCacheDataElseLoad
        let pinned = URLSessionConfiguration.pinned(by: try Pins.good(), trustRoots: try Pins.anchors, basedOn: base)
        #expect(pinned.urlCache == nil)
        #expect(pinned.requestCachePolicy == .reloadIgnoringLocalCacheData)
    }

    @Test func aCacheSetAfterwardsIsNeitherAnsweredFromNorWrittenTo() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let configuration = URLSessionConfiguration.pinned(by: try Pins.good(), trustRoots: try Pins.anchors,
                                                           basedOn: .ephemeral)
        let cache = Self.cache()
        configuration.urlCache = cache
        configuration.requestCachePolicy = .returnCacheDataElseLoad
        // A stale answer for /hello waits in the cache; /echo has none.
        let hello = URL(string: "https://localhost:\(server.port)/hello")!
        let stale = try #require(HTTPURLResponse(url: hello, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Cache-Control": "max-age=3600"]))
        cache.storeCachedResponse(CachedURLResponse(response: stale, data: Data("stale".utf8)), for: URLRequest(url: hello))
        try #require(cache.cachedResponse(for: URLRequest(url: hello)) != nil)
        let session = URLSession(configuration: configuration)

        let (data, _) = try await session.data(from: hello)
        #expect(String(decoding: data, as: UTF8.self) == "hello over a pinned connection")
        #expect(server.requests.withLock { $0 }.count == 1)

        let echo = URL(string: "https://localhost:\(server.port)/echo")!
        _ = try await session.data(from: echo)
        #expect(cache.cachedResponse(for: URLRequest(url: echo)) == nil)
        #expect(cache.cachedResponse(for: URLRequest(url: hello)).map { String(decoding: $0.data, as: UTF8.self) } == "stale")
    }
}
#endif

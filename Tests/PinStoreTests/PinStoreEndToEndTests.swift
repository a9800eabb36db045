import Foundation
import PinStoreDevServer
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Updates through the real URLSession fetcher against a real HTTP server on 127.0.0.1.
/// (URLSession on Linux trusts only the system store, so these use loopback http, which the
/// store allows for development: the list is signed, so everything but TLS is exercised.)
@Suite struct PinStoreEndToEndTests {
    func store(_ server: ListServer, directory: TemporaryDirectory, useChallenge: Bool = false,
               timeout: TimeInterval = 60, maximumListSize: Int = 1 << 20) throws -> PinStore {
        var configuration = try StoreFixtures.configuration(directory: directory.url, useChallenge: useChallenge,
                                                            maximumListSize: maximumListSize,
                                                            serviceURL: server.baseURL.appendingPathComponent("list.json"))
        configuration.requestTimeout = timeout
        return try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: ManualClock.inValidPeriod())
    }

    func withServer<T>(_ responder: @escaping ListServerResponder, _ body: (ListServer, TemporaryDirectory) async throws -> T) async throws -> T {
        let server = try await ListServer.start(responder: responder)
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        do {
            let result = try await body(server, directory)
            try await server.shutdown()
            return result
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    @Test func staticListUpdatesOverRealHTTP() async throws {
        try await withServer(ListResponders.staticList(try StoreFixtures.list("static-good.json"))) { server, directory in
            let store = try store(server, directory: directory)
            let report = await store.updateWithReport()
            #expect(report.result == .ok, "\(report.error?.description ?? "")")
            #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
            #expect(server.requestCount == 1)
        }
    }

    @Test func challengeModeUpdatesOverRealHTTPWithAFreshSignaturePerRequest() async throws {
        let responder = ListResponders.challengeList(body: try StoreFixtures.list("challenge-good.json"), signingKey: try StoreFixtures.signingKey())
        try await withServer(responder) { server, directory in
            let store = try store(server, directory: directory, useChallenge: true)
            #expect(await store.update() == .ok)
            #expect(await store.update(mode: .forced) == .ok)
            #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
            #expect(server.requestCount == 2)
        }
    }

    @Test func challengeModeResponseSignedWithAnotherKeyIsInvalidSignature() async throws {
        let responder = ListResponders.challengeList(body: try StoreFixtures.list("challenge-good.json"), signingKey: try StoreFixtures.otherSigningKey())
        try await withServer(responder) { server, directory in
            let store = try store(server, directory: directory, useChallenge: true)
            #expect(await store.update() == .invalidSignature)
        }
    }

    @Test func httpErrorStatusIsNetworkError() async throws {
        try await withServer({ _ in ListServerResponse(status: 500, body: Data("oops".utf8)) }) { server, directory in
            let store = try store(server, directory: directory)
            #expect(await store.update() == .networkError)
        }
    }

    @Test func redirectToPlainHTTPElsewhereIsRefused() async throws {
        let responder: ListServerResponder = { _ in
            ListServerResponse(status: 302, headers: [("Location", "http://pins.pinstore.invalid/list.json")])
        }
        try await withServer(responder) { server, directory in
            let store = try store(server, directory: directory)
            let report = await store.updateWithReport()
            #expect(report.result == .networkError)
            #expect(report.error?.reason.contains("redirect") == true)
        }
    }

    @Test func slowServerTimesOutAsNetworkError() async throws {
        let body = try StoreFixtures.list("static-good.json")
        // The answer would come after 10 minutes, and then be a good list: only the 1-second
        // timeout can make the update a network error, however late a loaded machine runs it
        // (a bound on the elapsed time measured the machine; a broken timeout shows as `.ok`).
        try await withServer({ _ in ListServerResponse(body: body, delay: HangGuard.seconds) }) { server, directory in
            let store = try store(server, directory: directory, timeout: 1)
            #expect(await store.update() == .networkError)
        }
    }

    @Test func bodyOverTheLimitIsInvalidDataWithoutReadingItAll() async throws {
        let huge = Data(repeating: 0x20, count: 4 << 20)
        try await withServer({ _ in ListServerResponse(body: huge) }) { server, directory in
            let store = try store(server, directory: directory, maximumListSize: 64 * 1024)
            #expect(await store.update() == .invalidData)
        }
    }

    @Test func unreachableServerIsNetworkError() async throws {
        // A port held closed for the whole test: a port freed by stopping a server can be taken
        // by another test's server before the store connects (it was, once, on a busy machine).
        let closed = try ClosedLoopbackPort()
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        var configuration = try StoreFixtures.configuration(directory: directory.url,
                                                            serviceURL: URL(string: "http://127.0.0.1:\(closed.port)/list.json")!)
        configuration.requestTimeout = 5
        let store = try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: ManualClock.inValidPeriod())
        #expect(await store.update() == .networkError)
        withExtendedLifetime(closed) {}
    }
}

extension PinStoreEndToEndTests {
    @Test func announcedBodyOverTheLimitIsRefusedBeforeReading() async throws {
        // The server announces its length (Content-Length); the fetcher stops at the headers.
        let huge = Data(repeating: 0x20, count: 2 << 20)
        try await withServer({ _ in ListServerResponse(headers: [("Content-Length", "\(huge.count)")], body: huge) }) { server, directory in
            let store = try store(server, directory: directory, maximumListSize: 64 * 1024)
            let report = await store.updateWithReport()
            #expect(report.result == .invalidData)
        }
    }

    @Test func badListOverRealHTTPLeavesStoreFileByteIdentical() async throws {
        let good = try StoreFixtures.list("static-good.json")
        let bad = try StoreFixtures.list("static-tampered-fingerprint.json")
        let serveBad = Locked(false)
        try await withServer({ _ in ListServerResponse(body: serveBad.withLock { $0 } ? bad : good) }) { server, directory in
            let store = try store(server, directory: directory)
            #expect(await store.update() == .ok)
            let before = try Data(contentsOf: store.configuration.storeFileURL)
            serveBad.withLock { $0 = true }
            #expect(await store.update(mode: .forced) == .invalidSignature)
            #expect(try Data(contentsOf: store.configuration.storeFileURL) == before)
        }
    }
}

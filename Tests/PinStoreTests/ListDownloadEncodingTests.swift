import Foundation
import PinStoreDevServer
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The list download takes the body as it is, never compressed (issue 32: libcurl inflates any
/// encoding a server names, with no back-pressure, so one megabyte of gzip grew a process by
/// gigabytes although the list limit was 1 MiB).
extension PinStoreEndToEndTests {
    @Test func theListIsAskedForWithoutContentEncoding() async throws {
        let asked = Locked<[String]>([])
        let list = try StoreFixtures.list("static-good.json")
        try await withServer({ request in
            asked.withLock { $0.append(request.header("Accept-Encoding") ?? "(none)") }
            return ListServerResponse(body: list)
        }) { server, directory in
            let store = try store(server, directory: directory)
            #expect(await store.update() == .ok)
        }
        #expect(asked.withLock { $0 } == ["identity"])
    }

    @Test func aGzipEncodedListIsRefusedUnreadAndThePinsInForceStay() async throws {
        let good = try StoreFixtures.list("static-good.json")
        // 65 KB that inflate to 64 MiB (Fixtures/make-hostile-fixtures.sh), sent whatever the
        // request asked for, as a hostile server would. scripts/list-download-bomb.sh passes a
        // bigger one (PINSTORE_GZIP_BOMB) and measures the process's peak resident memory.
        let bomb = try ProcessInfo.processInfo.environment["PINSTORE_GZIP_BOMB"].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
            ?? TestResources.fixture("hostile/zeros-64MiB.gz")
        let hostile = Locked(false)
        try await withServer({ _ in
            hostile.withLock { $0 }
                ? ListServerResponse(headers: [("Content-Encoding", "gzip"), ("Content-Type", "application/json")], body: bomb)
                : ListServerResponse(body: good)
        }) { server, directory in
            let store = try store(server, directory: directory)
            #expect(await store.update() == .ok)
            let stored = try Data(contentsOf: store.configuration.storeFileURL)
            hostile.withLock { $0 = true }
            let report = await store.updateWithReport(mode: .forced)
            #expect(report.result == .invalidData)
            #expect(report.error?.code == .invalidListData)
            #expect(report.error?.description.contains("gzip-encoded") == true, "\(report.error?.description ?? "no error")")
            #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
            #expect(try Data(contentsOf: store.configuration.storeFileURL) == stored)
        }
    }
}

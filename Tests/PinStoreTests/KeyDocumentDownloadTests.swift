import Foundation
import PinStoreDevServer
import Testing
@testable import PinStore

/// The key documents come through the same fetcher as the list; a refusal says it was the key
/// documents and carries their documented code (issue 32, finding 3: a 300 KB key-documents
/// response was refused as `invalidListData`, "The server announced a 307942-byte list").
extension PinStoreEndToEndTests {
    /// The list at `/list.json` and whatever `keys` holds at `/keys.json`.
    func withListAndKeyDocuments(_ keys: Locked<Data>, _ body: (PinStore) async throws -> Void) async throws {
        let list = try StoreFixtures.list("static-good.json")
        try await withServer({ request in
            ListServerResponse(body: request.uri.hasPrefix("/keys.json") ? keys.withLock { $0 } : list)
        }) { server, directory in
            var configuration = try StoreFixtures.configuration(directory: directory.url,
                                                                serviceURL: server.baseURL.appendingPathComponent("list.json"))
            configuration.keyDocumentURL = server.baseURL.appendingPathComponent("keys.json")
            try await body(try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: ManualClock.inValidPeriod()))
        }
    }

    @Test func anOversizedKeyDocumentsResponseIsInvalidKeyDocumentAndNamesTheKeyDocuments() async throws {
        let keys = Locked(Data(#"{"keyDocuments": []}"#.utf8))
        try await withListAndKeyDocuments(keys) { store in
            #expect(await store.update() == .ok)
            let stored = try Data(contentsOf: store.configuration.storeFileURL)
            // 300 KB, over the 256 KiB the key documents may take (KeyChain.maximumSize).
            keys.withLock { $0 = Data(#"{"keyDocuments": []}"#.utf8) + Data(repeating: 0x20, count: 300_000) }
            let report = await store.updateWithReport(mode: .forced)
            #expect(report.error?.code == .invalidKeyDocument, "\(report.error?.description ?? "no error")")
            #expect(report.error?.reason.contains("key documents") == true, "\(report.error?.description ?? "no error")")
            #expect(report.result == .invalidData)
            #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
            #expect(try Data(contentsOf: store.configuration.storeFileURL) == stored)
        }
    }
}

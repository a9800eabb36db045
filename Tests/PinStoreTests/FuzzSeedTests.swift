import Foundation
@_spi(Fuzzing) import PinStore
import PinStoreTestSupport
import Testing

/// The committed seeds reach what their fuzz target is for: a target whose seeds stop at the
/// first check (a wrong trusted key, a seed signed with another key) fuzzes only the parser.
@Suite struct FuzzSeedTests {
    @Test func theKeyDocumentSeedChainIsFollowedToItsLastVersion() throws {
        let seed = try Data(contentsOf: TestResources.packageRoot.appendingPathComponent("Fuzz/corpus/key-documents/chain-2-3"))
        #expect(FuzzEntryPoints.keyDocuments(seed) == [2, 3])
    }
}

import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Configuration values a new user may reach for to mean "no limit" must not trap.
@Suite struct ConfigurationLimitTests {
    @Test func storeWithTheLargestListSizeLimitIsCreatedWithoutTrapping() throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try StoreFixtures.store(ScriptedFetcher.serving(Data()), directory: directory.url, maximumListSize: .max)
        #expect(store.storedEntries.isEmpty)
    }
}

import Testing
import PinStore
@testable import PinStorePublisher

@Suite struct ProbeTargetTests {
    @Test func serverNameDefaultsToTheHost() {
        let target = ProbeTarget(host: "partner.example", port: 443, trustRoots: .system)
        #expect(target.serverName == "partner.example")
    }
}

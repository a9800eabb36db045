// snippet.hide
// The article "Testing your pinning" (PinStoreTesting), "Host names": test code, so XCTest
// where the toolchain has it. Compiled by `swift build`, never run.
#if canImport(XCTest)
import PinStore
import PinStoreTesting
import XCTest

// snippet.show
let fixture = try await PinningTestFixture.start(hosts: ["localhost", "api.example.test"])
XCTAssertEqual(fixture.store.matchPins(commonName: "api.example.test",
                                       certificateChain: fixture.pki.impostor.chainDER), .untrusted)
// snippet.hide
try await fixture.shutdown()
#endif

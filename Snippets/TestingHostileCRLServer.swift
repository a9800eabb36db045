// snippet.hide
// The article "Testing your pinning" (PinStoreTesting), "Slow and hostile servers": test code,
// so Swift Testing where the toolchain has it. Compiled by `swift build`, never run.
#if canImport(Testing)
import Foundation
import PinStoreTesting
import Testing

// snippet.show
let crls = try await TestCRLServer.start()
let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: crls.baseURL)
let points = (0..<1_000).map { crls.baseURL.appendingPathComponent("dp-\($0).crl") }
for point in points { crls.serve(.hang, at: point.lastPathComponent) }
let hostile = try pki.issueLeaf(for: ["localhost"], crlDistributionPoints: points)
// ... a handshake to `hostile` under a CRL mode, then:
#expect(crls.maximumConcurrentRequests <= 4)
// snippet.hide
#endif

// snippet.hide
// The article "Testing your pinning" (PinStoreTesting), "Certificate Transparency": two slices,
// the logs and leaves (`logs`), then the list that carries them (`list`). Compiled by
// `swift build`, never run.
import PinStore
import PinStoreTesting

// snippet.show
// snippet.logs
let pki = try TestPKI(hosts: ["localhost"])
let logA = try TestCTLog(keyType: .p256)
let logB = try TestCTLog(keyType: .rsa2048, kind: .staticCTAPI)
let compliant = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: logA), TestSCT(log: logB)])
let tampered = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: logA)],
                                 corruption: .flipSignatureByte(sctIndex: 0))
// snippet.end
// snippet.hide
let key = try TestListSigningKey()
// snippet.show
// snippet.list
var list = TestPinList(pinning: [compliant.certificate])
list.certificateTransparency = TestCTLogList(logs: [.init(logA, operatorName: "A"), .init(logB, operatorName: "B")],
                                             hosts: ["localhost": .enforce])
let server = try await TestListServer.start(serving: list, signedWith: key)
var configuration = PinStore.Configuration(serviceURL: server.listURL, publicKey: key.publicKeyBase64)
configuration.certificateTransparencyForPrivateAnchors = true
// snippet.end

// snippet.hide
// The article "Key documents and list expiry" (PinStore). Compiled by `swift build`, never run.
import Foundation
import PinStore

let listURL = URL(string: "https://pins.example.net/list.json")!
let (keyA, keyB, keyC) = ("BC3kV9OIDnMu...Nv+XE=", "BPq0fvSc...p8Y=", "BK7tJ2yQ...9Ww=")
// snippet.show
var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: keyA)
configuration.additionalPublicKeys = [keyB, keyC]
configuration.signatureThreshold = 2                 // any two of A, B, C
configuration.keyDocumentURL = URL(string: "https://pins.example.net/keys.json")!

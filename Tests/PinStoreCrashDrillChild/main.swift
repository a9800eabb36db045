// The child process of the crash drill (PinStoreCLITests/CrashDrillTests): forced list updates
// in a loop, as fast as the loopback server answers, until the test kills it with SIGKILL.
//
//   PinStoreCrashDrillChild <storage-directory> <list-url> <public-key>
import Foundation
import PinStore

let arguments = CommandLine.arguments
guard arguments.count == 4, let url = URL(string: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: PinStoreCrashDrillChild <storage-directory> <list-url> <public-key>\n".utf8))
    exit(2)
}
let store: PinStore
do {
    store = try PinStore(configuration: .init(serviceURL: url, publicKey: arguments[3], identifier: "drill",
                                              storageDirectory: URL(fileURLWithPath: arguments[1])))
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
FileHandle.standardOutput.write(Data("ready\n".utf8))
while true {
    let result = await store.update(mode: .forced)
    if result != .ok {
        FileHandle.standardError.write(Data("update: \(result)\n".utf8))
    }
}

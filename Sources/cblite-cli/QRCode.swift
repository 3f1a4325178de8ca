import CBLiteCore
import CQREncode
import Glibc

/// A QR code drawn with Unicode half blocks, two modules per character cell, through
/// libqrencode (linked into the tool only). Drawn for a dark terminal, as `qrencode -t UTF8`
/// does: the blocks are the light modules, with a quiet zone of light around.
enum QRCode {
    static let quietZone = 2

    static func render(_ text: String) throws -> String {
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else {
            throw CBLError(.badRequest, "cannot make a QR code of \(text.utf8.count) bytes: \(String(cString: strerror(errno)))")
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let data = code.pointee.data!
        // Light: outside the symbol (quiet zone) or a module whose bit 0 is clear.
        func light(_ row: Int, _ column: Int) -> Bool {
            guard (0..<width).contains(row), (0..<width).contains(column) else { return true }
            return data[row * width + column] & 1 == 0
        }
        var out = ""
        for row in stride(from: -quietZone, to: width + quietZone, by: 2) {
            for column in -quietZone..<(width + quietZone) {
                switch (light(row, column), light(row + 1, column)) {
                case (true, true): out += "█"
                case (true, false): out += "▀"
                case (false, true): out += "▄"
                case (false, false): out += " "
                }
            }
            out += "\n"
        }
        return out
    }
}

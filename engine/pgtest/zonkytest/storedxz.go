package zonkytest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// storedXz writes data as an .xz file of one stream and one block whose
// LZMA2 chunks are all stored, not compressed (the xz file format, 1.2.1,
// and LZMA2's chunk kinds 1 and 2). Every xz decoder reads it; decoding is
// a copy. The check is CRC32, as the xz command's -C crc32. It cannot
// fail; the error is buildJar's signature, which xzCommand shares.
func storedXz(out *bytes.Buffer, data []byte) error {
	const checkCRC32 = 0x01
	flags := []byte{0x00, checkCRC32}
	le32 := func(v uint32) { out.Write(binary.LittleEndian.AppendUint32(nil, v)) }

	// Stream header: magic, flags, the flags' CRC32.
	out.Write([]byte{0xFD, '7', 'z', 'X', 'Z', 0x00})
	out.Write(flags)
	le32(crc32.ChecksumIEEE(flags))

	// Block header: its size in fours less one, no sizes given, one
	// filter (LZMA2, 0x21) with one property byte (a 1 MiB dictionary),
	// padded to a multiple of four, then its CRC32.
	header := []byte{0x00, 0x00, 0x21, 0x01, 16}
	for (len(header)+4)%4 != 0 {
		header = append(header, 0x00)
	}
	header[0] = byte((len(header)+4)/4 - 1)
	blockStart := out.Len()
	out.Write(header)
	le32(crc32.ChecksumIEEE(header))

	// Stored chunks of at most 64 KiB: the first resets the dictionary
	// (1), the rest keep it (2); a zero byte ends LZMA2's data.
	const chunk = 1 << 16
	for i := 0; i < len(data); i += chunk {
		part := data[i:min(i+chunk, len(data))]
		control := byte(0x02)
		if i == 0 {
			control = 0x01
		}
		out.Write([]byte{control, byte((len(part) - 1) >> 8), byte(len(part) - 1)})
		out.Write(part)
	}
	out.WriteByte(0x00)
	unpadded := out.Len() - blockStart + 4 // with the check, without the padding
	for (out.Len()-blockStart)%4 != 0 {
		out.WriteByte(0x00)
	}
	le32(crc32.ChecksumIEEE(data))

	// Index: one record (unpadded size, uncompressed size), padded, then
	// its CRC32.
	index := []byte{0x00}
	index = binary.AppendUvarint(index, 1)
	index = binary.AppendUvarint(index, uint64(unpadded))
	index = binary.AppendUvarint(index, uint64(len(data)))
	for len(index)%4 != 0 {
		index = append(index, 0x00)
	}
	out.Write(index)
	le32(crc32.ChecksumIEEE(index))

	// Stream footer: CRC32 of what follows it, the index's size in fours
	// less one, the flags again, magic.
	backward := binary.LittleEndian.AppendUint32(nil, uint32((len(index)+4)/4-1))
	le32(crc32.ChecksumIEEE(append(backward, flags...)))
	out.Write(backward)
	out.Write(flags)
	out.Write([]byte{'Y', 'Z'})
	return nil
}

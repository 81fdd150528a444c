package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// tinySym is a symbol for tinyELF.
type tinySym struct {
	name       string
	value      uint64
	size       uint64
	bind, typ  byte
	sectionIdx uint16
}

// tinyELF builds a minimal x86-64 ELF executable with a .text section at
// 0x401000 (0x100 bytes, file offset 0x1000), a second executable section
// .text2 at 0x402100 (0x80 bytes, file offset 0x1100), one PT_LOAD per
// section, a build-id note, a .gnu_debuglink and the given symbols.
func tinyELF(syms []tinySym) []byte {
	le := binary.LittleEndian
	var shstr bytes.Buffer
	shstr.WriteByte(0)
	addName := func(s string) uint32 {
		off := uint32(shstr.Len())
		shstr.WriteString(s)
		shstr.WriteByte(0)
		return off
	}
	var strtab bytes.Buffer
	strtab.WriteByte(0)
	var symtab bytes.Buffer
	symtab.Write(make([]byte, 24)) // null symbol
	for _, s := range syms {
		off := uint32(strtab.Len())
		strtab.WriteString(s.name)
		strtab.WriteByte(0)
		var e [24]byte
		le.PutUint32(e[0:], off)
		e[4] = s.bind<<4 | s.typ
		le.PutUint16(e[6:], s.sectionIdx)
		le.PutUint64(e[8:], s.value)
		le.PutUint64(e[16:], s.size)
		symtab.Write(e[:])
	}
	note := []byte{4, 0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0, 1, 2, 3, 4, 5, 6, 7, 8}
	link := append([]byte("prog.debug\x00\x00"), 0x78, 0x56, 0x34, 0x12)

	type sec struct {
		name            string
		typ             elf.SectionType
		flags           elf.SectionFlag
		addr, off, size uint64
		data            []byte
		link, entsize   uint32
	}
	secs := []sec{
		{},
		{name: ".text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, addr: 0x401000, off: 0x1000, size: 0x100},
		{name: ".text2", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, addr: 0x402100, off: 0x1100, size: 0x80},
		{name: ".symtab", typ: elf.SHT_SYMTAB, data: symtab.Bytes(), link: 4, entsize: 24},
		{name: ".strtab", typ: elf.SHT_STRTAB, data: strtab.Bytes()},
		{name: ".note.gnu.build-id", typ: elf.SHT_NOTE, flags: elf.SHF_ALLOC, data: note},
		{name: ".gnu_debuglink", typ: elf.SHT_PROGBITS, data: link},
		{name: ".shstrtab", typ: elf.SHT_STRTAB},
	}
	nameOff := make([]uint32, len(secs))
	for i := 1; i < len(secs); i++ {
		nameOff[i] = addName(secs[i].name)
	}
	secs[len(secs)-1].data = shstr.Bytes()

	out := make([]byte, 0x1180)
	// Place section contents after the text.
	for i := range secs {
		if secs[i].data != nil {
			for len(out)%8 != 0 {
				out = append(out, 0)
			}
			secs[i].off = uint64(len(out))
			secs[i].size = uint64(len(secs[i].data))
			out = append(out, secs[i].data...)
		}
	}
	for len(out)%8 != 0 {
		out = append(out, 0)
	}
	shoff := uint64(len(out))
	for i, s := range secs {
		var h [64]byte
		le.PutUint32(h[0:], nameOff[i])
		le.PutUint32(h[4:], uint32(s.typ))
		le.PutUint64(h[8:], uint64(s.flags))
		le.PutUint64(h[16:], s.addr)
		le.PutUint64(h[24:], s.off)
		le.PutUint64(h[32:], s.size)
		le.PutUint32(h[40:], s.link)
		le.PutUint64(h[56:], uint64(s.entsize))
		if s.typ == elf.SHT_SYMTAB {
			le.PutUint32(h[44:], 1)
		}
		out = append(out, h[:]...)
	}
	// ELF header.
	h := out[:64]
	copy(h, []byte{0x7f, 'E', 'L', 'F', 2, 1, 1})
	le.PutUint16(h[16:], uint16(elf.ET_EXEC))
	le.PutUint16(h[18:], uint16(elf.EM_X86_64))
	le.PutUint32(h[20:], 1)
	le.PutUint64(h[24:], 0x401000)
	le.PutUint64(h[32:], 64) // phoff
	le.PutUint64(h[40:], shoff)
	le.PutUint16(h[52:], 64)
	le.PutUint16(h[54:], 56)
	le.PutUint16(h[56:], 2)
	le.PutUint16(h[58:], 64)
	le.PutUint16(h[60:], uint16(len(secs)))
	le.PutUint16(h[62:], uint16(len(secs)-1))
	// Program headers.
	for i, p := range []struct{ off, vaddr, size uint64 }{{0x1000, 0x401000, 0x100}, {0x1100, 0x402100, 0x80}} {
		ph := out[64+56*i : 64+56*(i+1)]
		le.PutUint32(ph[0:], uint32(elf.PT_LOAD))
		le.PutUint32(ph[4:], uint32(elf.PF_R|elf.PF_X))
		le.PutUint64(ph[8:], p.off)
		le.PutUint64(ph[16:], p.vaddr)
		le.PutUint64(ph[24:], p.vaddr)
		le.PutUint64(ph[32:], p.size)
		le.PutUint64(ph[40:], p.size)
		le.PutUint64(ph[48:], 0x1000)
	}
	return out
}

var binaryLE = binary.LittleEndian

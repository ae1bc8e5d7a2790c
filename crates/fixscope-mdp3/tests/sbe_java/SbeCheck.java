// The independent decoder of fixscope-mdp3's cross-check (tests/feed_contract/sbe_tool.rs):
// real-logic's SBE tool generates Java decoders (package mktdata) from the same
// schema/FixBinary.xml; this program reads a file of MsgSize-framed MDP 3.0 messages with
// them and prints, per message, "T templateId", and per NoMDEntries entry of a
// MDIncrementalRefreshBook46 or MDIncrementalRefreshTradeSummary48
//   E securityID rptSeq mDEntryPxMantissa mDEntrySize mDUpdateAction
// (a null as "-"), then "O n", the count of its NoOrderIDEntries group — reached only by
// stepping over every NoMDEntries entry by the group's own blockLength.

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;
import mktdata.MDIncrementalRefreshBook46Decoder;
import mktdata.MDIncrementalRefreshTradeSummary48Decoder;
import mktdata.MessageHeaderDecoder;
import mktdata.PRICENULL9Decoder;
import org.agrona.concurrent.UnsafeBuffer;

public final class SbeCheck {
    public static void main(final String[] args) throws Exception {
        final byte[] bytes = Files.readAllBytes(Paths.get(args[0]));
        final UnsafeBuffer buffer = new UnsafeBuffer(bytes);
        final MessageHeaderDecoder header = new MessageHeaderDecoder();
        final MDIncrementalRefreshBook46Decoder book = new MDIncrementalRefreshBook46Decoder();
        final MDIncrementalRefreshTradeSummary48Decoder trade = new MDIncrementalRefreshTradeSummary48Decoder();
        final StringBuilder out = new StringBuilder();
        int at = 0;
        while (at + 2 <= bytes.length) {
            // MsgSize: the whole message, its own two bytes included; little-endian.
            final int size = ByteBuffer.wrap(bytes, at, 2).order(ByteOrder.LITTLE_ENDIAN).getShort() & 0xFFFF;
            if (size < 10 || at + size > bytes.length) {
                throw new IllegalStateException("bad MsgSize " + size + " at " + at);
            }
            header.wrap(buffer, at + 2);
            final int templateId = header.templateId();
            final int body = at + 2 + header.encodedLength();
            out.append("T ").append(templateId).append('\n');
            if (templateId == MDIncrementalRefreshBook46Decoder.TEMPLATE_ID) {
                book.wrap(buffer, body, header.blockLength(), header.version());
                for (final MDIncrementalRefreshBook46Decoder.NoMDEntriesDecoder e : book.noMDEntries()) {
                    final long px = e.mDEntryPx().mantissa();
                    final int qty = e.mDEntrySize();
                    out.append("E ").append(e.securityID()).append(' ').append(e.rptSeq()).append(' ')
                        .append(px == PRICENULL9Decoder.mantissaNullValue() ? "-" : Long.toString(px)).append(' ')
                        .append(qty == MDIncrementalRefreshBook46Decoder.NoMDEntriesDecoder.mDEntrySizeNullValue()
                            ? "-" : Integer.toString(qty)).append(' ')
                        .append(e.mDUpdateActionRaw()).append('\n');
                }
                out.append("O ").append(book.noOrderIDEntries().count()).append('\n');
            } else if (templateId == MDIncrementalRefreshTradeSummary48Decoder.TEMPLATE_ID) {
                trade.wrap(buffer, body, header.blockLength(), header.version());
                for (final MDIncrementalRefreshTradeSummary48Decoder.NoMDEntriesDecoder e : trade.noMDEntries()) {
                    out.append("E ").append(e.securityID()).append(' ').append(e.rptSeq()).append(' ')
                        .append(e.mDEntryPx().mantissa()).append(' ').append(e.mDEntrySize()).append(' ')
                        .append(e.mDUpdateActionRaw()).append('\n');
                }
                out.append("O ").append(trade.noOrderIDEntries().count()).append('\n');
            }
            at += size;
        }
        if (at != bytes.length) {
            throw new IllegalStateException("trailing bytes at " + at);
        }
        System.out.print(out);
    }
}

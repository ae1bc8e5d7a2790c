// The independent decoder of fixscope-ilink3's cross-check (tests/seam_contract/sbe_tool.rs):
// real-logic's SBE tool generates Java decoders (package iLinkBinary) from the same
// schema/ilinkbinary.xml; this program reads a file of SOFH-framed iLink 3 messages with
// them and prints one line per message:
//   templateId seqNum uUID orderRequestID clOrdID orderID possRetransFlag sendingTimeEpoch
// a field the template lacks, or holding its null value, as "-". Arguments: the file,
// then the names of the templates to know (NewOrderSingle514 ...): each one's decoder is
// iLinkBinary.<name>Decoder, its template id the decoder's own TEMPLATE_ID.

import iLinkBinary.MessageHeaderDecoder;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import org.agrona.concurrent.UnsafeBuffer;

public final class SbeCheck {
    private static final String[] FIELDS = {
        "seqNum", "uUID", "orderRequestID", "clOrdID", "orderID", "possRetransFlag", "sendingTimeEpoch"
    };

    public static void main(final String[] args) throws Exception {
        final byte[] bytes = Files.readAllBytes(Paths.get(args[0]));
        final Map<Integer, Class<?>> decoders = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            final Class<?> c = Class.forName("iLinkBinary." + args[i] + "Decoder");
            decoders.put(c.getField("TEMPLATE_ID").getInt(null), c);
        }
        final UnsafeBuffer buffer = new UnsafeBuffer(bytes);
        final MessageHeaderDecoder header = new MessageHeaderDecoder();
        final StringBuilder out = new StringBuilder();
        int at = 0;
        while (at + 4 <= bytes.length) {
            // CME's Simple Open Framing Header: length (SOFH included), 0xCAFE; little-endian.
            final int length = ByteBuffer.wrap(bytes, at, 2).order(ByteOrder.LITTLE_ENDIAN).getShort() & 0xFFFF;
            final int encoding = ByteBuffer.wrap(bytes, at + 2, 2).order(ByteOrder.LITTLE_ENDIAN).getShort() & 0xFFFF;
            if (encoding != 0xCAFE || length < 12) {
                throw new IllegalStateException("bad SOFH at " + at);
            }
            header.wrap(buffer, at + 4);
            final int templateId = header.templateId();
            final Class<?> c = decoders.get(templateId);
            if (c == null) {
                throw new IllegalStateException("no decoder for template " + templateId);
            }
            final Object decoder = c.getConstructor().newInstance();
            c.getMethod("wrap", org.agrona.DirectBuffer.class, int.class, int.class, int.class)
                .invoke(decoder, buffer, at + 4 + header.encodedLength(), header.blockLength(), header.version());
            out.append(templateId);
            for (final String f : FIELDS) {
                out.append(' ').append(field(c, decoder, f));
            }
            out.append('\n');
            at += length;
        }
        System.out.print(out);
    }

    private static String field(final Class<?> c, final Object decoder, final String name) throws Exception {
        final Method m;
        try {
            m = c.getMethod(name);
        } catch (final NoSuchMethodException e) {
            return "-";
        }
        Object v = m.invoke(decoder);
        if (v instanceof Enum) {
            v = v.getClass().getMethod("value").invoke(v);
        }
        if (v instanceof String) {
            return ((String) v).isEmpty() ? "-" : (String) v;
        }
        final long n = ((Number) v).longValue();
        try {
            final Object nul = c.getMethod(name + "NullValue").invoke(null);
            if (((Number) nul).longValue() == n) {
                return "-";
            }
        } catch (final NoSuchMethodException e) {
            // An enum or a field without a null value.
        }
        return (v instanceof Long) ? Long.toUnsignedString(n) : Long.toString(n);
    }
}

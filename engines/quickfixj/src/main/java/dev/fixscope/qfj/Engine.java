package dev.fixscope.qfj;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import quickfix.Application;
import quickfix.DefaultMessageFactory;
import quickfix.FieldNotFound;
import quickfix.MemoryStoreFactory;
import quickfix.Message;
import quickfix.SLF4JLogFactory;
import quickfix.Session;
import quickfix.SessionID;
import quickfix.SessionSettings;
import quickfix.SocketAcceptor;
import quickfix.SocketInitiator;
import quickfix.field.AvgPx;
import quickfix.field.ClOrdID;
import quickfix.field.CumQty;
import quickfix.field.ExecID;
import quickfix.field.ExecType;
import quickfix.field.LastPx;
import quickfix.field.LastQty;
import quickfix.field.LeavesQty;
import quickfix.field.MsgType;
import quickfix.field.OrdStatus;
import quickfix.field.OrdType;
import quickfix.field.OrderID;
import quickfix.field.OrderQty;
import quickfix.field.Price;
import quickfix.field.Side;
import quickfix.field.Symbol;
import quickfix.field.TransactTime;
import quickfix.fix44.ExecutionReport;
import quickfix.fix44.NewOrderSingle;

/**
 * A QuickFIX/J acceptor that answers every NewOrderSingle with an ack (150=0) and a fill
 * (150=F), and an initiator that sends NewOrderSingles at a fixed rate. Both log their own
 * timestamps per ClOrdID as CSV (clordid,event,ns) with System.nanoTime(), which on Linux
 * is CLOCK_MONOTONIC: the clock of fixscope live's timestamps.
 *
 * <pre>
 *   Engine acceptor  PORT LOG            events: recv, ack_send, fill_send
 *   Engine initiator PORT LOG RATE COUNT events: send, ack_recv, fill_recv
 * </pre>
 *
 * A "send" time is taken just before the message is handed to QuickFIX/J (so it precedes
 * the bytes on the wire); a "recv" time when QuickFIX/J hands the parsed message over (so
 * it follows them). The acceptor stops when the initiator logs out, or on SIGTERM.
 */
public final class Engine implements Application {
    private final boolean acceptor;
    private final Path log;
    private final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();
    private final CountDownLatch loggedOn = new CountDownLatch(1);
    private final CountDownLatch loggedOut = new CountDownLatch(1);
    private final AtomicLong fills = new AtomicLong();
    private final AtomicLong execIds = new AtomicLong();
    /** Session-level messages this engine sent, by MsgType (its own toAdmin callbacks). */
    private final Map<String, AtomicLong> adminSent = new ConcurrentHashMap<>();
    /** Session-level messages this engine read, by MsgType (its own fromAdmin callbacks). */
    private final Map<String, AtomicLong> adminReceived = new ConcurrentHashMap<>();
    private volatile boolean written;

    private Engine(boolean acceptor, Path log) {
        this.acceptor = acceptor;
        this.log = log;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3 || !(args[0].equals("acceptor") || args[0].equals("initiator"))) {
            System.err.println(
                    "usage: Engine acceptor PORT LOG | Engine initiator PORT LOG RATE COUNT [TEST_REQUESTS]");
            System.exit(2);
        }
        int port = Integer.parseInt(args[1]);
        Engine app = new Engine(args[0].equals("acceptor"), Path.of(args[2]));
        if (app.acceptor) {
            app.runAcceptor(port);
        } else {
            long testRequests = args.length > 5 ? Long.parseLong(args[5]) : 0;
            app.runInitiator(port, Long.parseLong(args[3]), Long.parseLong(args[4]), testRequests);
        }
    }

    private static SessionSettings settings(boolean acceptor, int port) {
        SessionSettings s = new SessionSettings();
        SessionID id = acceptor
                ? new SessionID("FIX.4.4", "EXCH", "CLIENT")
                : new SessionID("FIX.4.4", "CLIENT", "EXCH");
        s.setString(id, "ConnectionType", acceptor ? "acceptor" : "initiator");
        s.setString(id, "StartTime", "00:00:00");
        s.setString(id, "EndTime", "00:00:00");
        s.setString(id, "NonStopSession", "Y");
        s.setString(id, "HeartBtInt", "30");
        s.setString(id, "ResetOnLogon", "Y");
        s.setString(id, "UseDataDictionary", "Y");
        s.setString(id, "DataDictionary", "FIX44.xml");
        if (acceptor) {
            s.setString(id, "SocketAcceptAddress", "127.0.0.1");
            s.setLong(id, "SocketAcceptPort", port);
        } else {
            s.setString(id, "SocketConnectHost", "127.0.0.1");
            s.setLong(id, "SocketConnectPort", port);
            s.setLong(id, "ReconnectInterval", 1);
        }
        s.setString(id, "SocketTcpNoDelay", "Y");
        return s;
    }

    private void runAcceptor(int port) throws Exception {
        SessionSettings s = settings(true, port);
        SocketAcceptor a = new SocketAcceptor(this, new MemoryStoreFactory(), s,
                new SLF4JLogFactory(s), new DefaultMessageFactory());
        Runtime.getRuntime().addShutdownHook(new Thread(this::writeLog));
        a.start();
        System.err.println("acceptor: listening on 127.0.0.1:" + port);
        loggedOut.await();
        a.stop();
        writeLog();
    }

    private void runInitiator(int port, long rate, long count, long testRequests)
            throws Exception {
        SessionSettings s = settings(false, port);
        SocketInitiator i = new SocketInitiator(this, new MemoryStoreFactory(), s,
                new SLF4JLogFactory(s), new DefaultMessageFactory());
        i.start();
        if (!loggedOn.await(20, TimeUnit.SECONDS)) {
            System.err.println("initiator: no logon within 20 s");
            System.exit(1);
        }
        SessionID id = i.getSessions().get(0);
        long period = 1_000_000_000L / rate;
        long start = System.nanoTime();
        for (long n = 0; n < count; n++) {
            long due = start + n * period;
            long wait = due - System.nanoTime();
            if (wait > 0) {
                LockSupport.parkNanos(wait);
            }
            String clOrdId = "QFJ-" + n;
            NewOrderSingle o = new NewOrderSingle(new ClOrdID(clOrdId), new Side(Side.BUY),
                    new TransactTime(), new OrdType(OrdType.LIMIT));
            o.set(new Symbol("FXS"));
            o.set(new OrderQty(100));
            o.set(new Price(10.25));
            events.add(clOrdId + ",send," + System.nanoTime());
            Session.sendToTarget(o, id);
            // TestRequests spread over the run, every one with TestReqID TEST as QuickFIX
            // engines send them; the acceptor's engine answers each with a Heartbeat.
            if (testRequests > 0 && (n + 1) % Math.max(1, count / testRequests) == 0
                    && adminSent.getOrDefault("1", new AtomicLong()).get() < testRequests) {
                Session.lookupSession(id).generateTestRequest("TEST");
            }
        }
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (fills.get() < count && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        // Stop only once the acceptor's Logout has been read (onLogout): then both Logouts
        // counted by toAdmin are on the wire. A stop that closes the socket before the
        // reply is written (the timer sends our Logout up to 1 s after logout()) would
        // leave the acceptor's toAdmin counting a Logout the wire never carried.
        Session.lookupSession(id).logout("done");
        if (!loggedOut.await(20, TimeUnit.SECONDS)) {
            System.err.println("initiator: no Logout answer within 20 s");
        }
        i.stop();
        writeLog();
        System.err.println("initiator: sent " + count + ", fills " + fills.get());
        System.exit(fills.get() == count ? 0 : 1);
    }

    private synchronized void writeLog() {
        if (written) {
            return;
        }
        written = true;
        List<String> lines = new ArrayList<>(events);
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(log))) {
            w.println("clordid,event,ns");
            for (String l : lines) {
                w.println(l);
            }
            // Counts of the session-level messages sent and read:
            // "admin,sent_<MsgType>,<count>" and "admin,recv_<MsgType>,<count>".
            printCounts(w, "sent_", adminSent);
            printCounts(w, "recv_", adminReceived);
        } catch (IOException e) {
            System.err.println("cannot write " + log + ": " + e);
        }
    }

    @Override
    public void fromApp(Message m, SessionID id) {
        long now = System.nanoTime();
        try {
            String type = m.getHeader().getString(MsgType.FIELD);
            if (acceptor && type.equals(MsgType.ORDER_SINGLE)) {
                String clOrdId = m.getString(ClOrdID.FIELD);
                events.add(clOrdId + ",recv," + now);
                answer(clOrdId, m, id);
            } else if (!acceptor && type.equals(MsgType.EXECUTION_REPORT)) {
                String clOrdId = m.getString(ClOrdID.FIELD);
                char exec = m.getChar(ExecType.FIELD);
                if (exec == ExecType.NEW) {
                    events.add(clOrdId + ",ack_recv," + now);
                } else if (exec == ExecType.TRADE) {
                    events.add(clOrdId + ",fill_recv," + now);
                    fills.incrementAndGet();
                }
            }
        } catch (FieldNotFound e) {
            System.err.println("message without " + e.field + ": " + m);
        }
    }

    private void answer(String clOrdId, Message order, SessionID id) throws FieldNotFound {
        String orderId = "O-" + clOrdId;
        ExecutionReport ack = report(orderId, clOrdId, ExecType.NEW, OrdStatus.NEW, 100, 0);
        events.add(clOrdId + ",ack_send," + System.nanoTime());
        send(ack, id);
        ExecutionReport fill = report(orderId, clOrdId, ExecType.TRADE, OrdStatus.FILLED, 0, 100);
        fill.set(new LastQty(100));
        fill.set(new LastPx(10.25));
        events.add(clOrdId + ",fill_send," + System.nanoTime());
        send(fill, id);
    }

    private ExecutionReport report(String orderId, String clOrdId, char exec, char status,
            double leaves, double cum) {
        ExecutionReport r = new ExecutionReport(new OrderID(orderId),
                new ExecID("E-" + execIds.incrementAndGet()), new ExecType(exec),
                new OrdStatus(status), new Side(Side.BUY), new LeavesQty(leaves),
                new CumQty(cum), new AvgPx(cum > 0 ? 10.25 : 0));
        r.set(new ClOrdID(clOrdId));
        r.set(new Symbol("FXS"));
        r.set(new OrderQty(100));
        return r;
    }

    private static void send(Message m, SessionID id) {
        try {
            Session.sendToTarget(m, id);
        } catch (quickfix.SessionNotFound e) {
            System.err.println("session gone: " + e);
        }
    }

    @Override
    public void onCreate(SessionID id) {}

    @Override
    public void onLogon(SessionID id) {
        loggedOn.countDown();
    }

    @Override
    public void onLogout(SessionID id) {
        loggedOut.countDown();
    }

    private static void printCounts(PrintWriter w, String prefix, Map<String, AtomicLong> counts) {
        for (Map.Entry<String, AtomicLong> e : counts.entrySet()) {
            w.println("admin," + prefix + e.getKey() + "," + e.getValue().get());
        }
    }

    /** One more session-level message of `m`'s MsgType ("?" when it has none). */
    private static void count(Map<String, AtomicLong> counts, Message m) {
        String type;
        try {
            type = m.getHeader().getString(MsgType.FIELD);
        } catch (FieldNotFound e) {
            type = "?";
        }
        counts.computeIfAbsent(type, t -> new AtomicLong()).incrementAndGet();
    }

    @Override
    public void toAdmin(Message m, SessionID id) {
        count(adminSent, m);
    }

    @Override
    public void fromAdmin(Message m, SessionID id) {
        count(adminReceived, m);
    }

    @Override
    public void toApp(Message m, SessionID id) {}
}
